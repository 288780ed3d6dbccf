"""One per-user limit on background work: runs (fits and applies) queued or running, and image
featurizations queued or running, count together, so no kind of request lets one user pile up
work that the executor would then have to get through before anyone else's."""

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.db.models import User
from app.jobs.execute.job_owners import ACTIVE_RUN_STATUSES, active_jobs
from app.services.errors import TooManyRequests

__all__ = ["ACTIVE_RUN_STATUSES", "check_active_jobs"]

RETRY_AFTER_S = 10


def check_active_jobs(session: Session, user: User | None, max_active: int | None) -> None:
    """Refuse (429) one more background job beyond the user's limit.

    The user's row is written first, which locks it (SQLite: the database's write lock) until
    the job is committed, so concurrent requests of one user are counted one after another."""
    if user is None or max_active is None:
        return
    session.execute(
        update(User).where(User.id == user.id).values(id=User.id),
        execution_options={"synchronize_session": False},
    )
    active = active_jobs(session, user.id)
    if active >= max_active:
        raise TooManyRequests(
            f"you already have {active} jobs (runs and image featurizations) queued or running "
            f"(at most {max_active} per user); wait for one to finish or cancel a run",
            retry_after=RETRY_AFTER_S,
        )
