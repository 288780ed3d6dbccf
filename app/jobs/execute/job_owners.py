"""Whose background work a job is: the user who started the run or asked for the
featurization (None when nobody did, e.g. demo data), and how much of it they have: the
per-user limit (app/services/job_limits.py) and the executors' fair turns."""

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Dataset, Run
from app.db.session import session_scope

ACTIVE_RUN_STATUSES = ("queued", "running")


def active_jobs(session: Session, owner: int | None) -> int:
    """The owner's runs queued or running plus the featurizations they asked for that are (a
    collection's together: one)."""
    runs = session.scalar(
        select(func.count())
        .select_from(Run)
        .where(Run.created_by_id == owner, Run.status.in_(ACTIVE_RUN_STATUSES))
    )
    # Few datasets are featurizing at any moment; who asked is in the job's JSON record. A
    # collection's images (one batch) count as one job.
    records = session.execute(
        select(Dataset.id, Dataset.featurization).where(Dataset.status == "featurizing")
    )
    featurizations = {
        (record or {}).get("batch") or dataset_id
        for dataset_id, record in records
        if (record or {}).get("requested_by") == owner
    }
    return int(runs or 0) + len(featurizations)


def run_owner(factory: sessionmaker[Session], run_id: int) -> int | None:
    with session_scope(factory) as session:
        return session.scalar(select(Run.created_by_id).where(Run.id == run_id))


def featurization_owner(factory: sessionmaker[Session], dataset_id: int) -> int | None:
    with session_scope(factory) as session:
        record = session.scalar(select(Dataset.featurization).where(Dataset.id == dataset_id))
    owner = (record or {}).get("requested_by")
    return int(owner) if owner is not None else None


def featurization_owners(
    factory: sessionmaker[Session], dataset_ids: list[int]
) -> dict[int, int | None]:
    """`featurization_owner` of many datasets in one query (a collection's thousand images)."""
    owners: dict[int, int | None] = {}
    with session_scope(factory) as session:
        for start in range(0, len(dataset_ids), 500):  # within every database's bound variables
            rows = session.execute(
                select(Dataset.id, Dataset.featurization).where(
                    Dataset.id.in_(dataset_ids[start : start + 500])
                )
            )
            for dataset_id, record in rows:
                owner = (record or {}).get("requested_by")
                owners[dataset_id] = int(owner) if owner is not None else None
    return owners
