"""One per-user limit on background work: runs (fits and applies) queued or running, and image
featurizations queued or running, count together, so no kind of request lets one user pile up
work that the executor would then have to get through before anyone else's."""

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.db.models import User
from app.jobs.execute.job_owners import ACTIVE_RUN_STATUSES, active_jobs
from app.services.errors import InvalidInput, TooManyRequests

__all__ = ["ACTIVE_RUN_STATUSES", "check_active_jobs"]

RETRY_AFTER_S = 10


def check_active_jobs(
    session: Session,
    user: User | None,
    max_active: int | None,
    *,
    adding: int = 1,
    what: str = "",
    lock: bool = True,
) -> None:
    """Refuse (429) ``adding`` more background jobs (an apply batch's runs each count) beyond
    the user's limit; ``what`` names them in the refusal.

    With ``lock`` the user's row is written first, which locks it (SQLite: the database's write
    lock) until the jobs are committed, so concurrent requests of one user are counted one after
    another: call it in the short transaction that queues them. Without, it is a read-only
    early refusal (before a long upload is read)."""
    if user is None or max_active is None:
        return
    if lock:
        session.execute(
            update(User).where(User.id == user.id).values(id=User.id),
            execution_options={"synchronize_session": False},
        )
    active = active_jobs(session, user.id)
    if adding > max_active:  # waiting would not help
        raise InvalidInput(
            f"{what or 'this request'} would queue {adding:,} background jobs, and one user may "
            f"have at most {max_active} queued or running (MAX_ACTIVE_JOBS_PER_USER); send it "
            "in parts"
        )
    if active + adding > max_active:
        queues = f"; {what} would queue {adding:,} more" if adding > 1 else ""
        raise TooManyRequests(
            f"you already have {active} jobs (runs and image featurizations) queued or running "
            f"(at most {max_active} per user){queues}; wait for one to finish or cancel a run",
            retry_after=RETRY_AFTER_S,
        )
