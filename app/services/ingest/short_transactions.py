"""An upload in three short write transactions, so nobody waits on it.

SQLite has one write lock for the whole database, and a request holds it from its first insert to
its commit: an upload that inserted its dataset row and then spent 30 s parsing and writing arrays
kept every other user's annotations and sign-ins waiting (then failing). So an upload:

1. inserts its dataset rows as ``uploading`` (invisible to everyone: listings skip them, a read
   answers 404) and commits;
2. does the long work (parse, check, write the array store) with no SQL write at all: the arrays'
   rows are held back (``chunks.deferred_records``) and so are changes to the dataset rows (no
   autoflush); a write attempted anyway is a programming error, raised at once;
3. records the arrays, gives the rows their real status and runs ``finish`` (the job-limit check,
   which locks the user's row) in one short transaction.

If anything fails after the first commit, what the store got is removed (the rollback) and the
reserved rows are deleted in a short transaction of their own. After a crash, rows left
``uploading`` are removed at the next start-up (`sweep_abandoned_uploads`), and with them the
arrays nothing records (`array_store.sweep_orphans`). PostgreSQL gets the same shape: no row lock
is held while the bytes are worked on.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import delete, event, update
from sqlalchemy.orm import ORMExecuteState, Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError

from app.db.models import Dataset
from app.services.errors import Conflict
from app.store import chunks

UPLOADING = "uploading"

_NO_WRITES = "short_transactions_no_writes"


def import_in_short_transactions(
    session: Session,
    datasets: Sequence[Dataset],
    work: Callable[[], None],
    *,
    reserve: Callable[[], None] = lambda: None,
    finish: Callable[[], None] = lambda: None,
) -> None:
    """Insert ``datasets`` (with the status each will have when done) and what ``reserve``
    adds once they have ids, run ``work`` outside any write transaction, then ``finish`` and
    commit. Any error removes every trace and is raised again."""
    final_status = [d.status for d in datasets]
    for dataset in datasets:
        dataset.status = UPLOADING
        session.add(dataset)
    session.flush()
    reserve()
    session.commit()
    ids = [d.id for d in datasets]
    try:
        # Left in reverse order: writes allowed again, then the arrays' rows recorded.
        with chunks.deferred_records(session), session.no_autoflush, writes_refused(session):
            work()
        finish()  # first: counting the user's jobs must not count these
        _set_statuses(session, datasets, final_status)
        session.commit()
    except StaleDataError:
        _abandon(session, ids)
        raise Conflict(
            "the project was deleted while the file was uploading; nothing was stored"
        ) from None
    except BaseException:
        _abandon(session, ids)
        raise


def _set_statuses(session: Session, datasets: Sequence[Dataset], statuses: list[str]) -> None:
    """One UPDATE per status rather than one per row (a stack's thousand images)."""
    session.flush()
    for status in set(statuses):
        ids = [d.id for d, s in zip(datasets, statuses, strict=True) if s == status]
        for start in range(0, len(ids), 500):  # within every database's bound variables
            part = ids[start : start + 500]
            result = session.execute(
                update(Dataset).where(Dataset.id.in_(part)).values(status=status),
                execution_options={"synchronize_session": False},
            )
            if getattr(result, "rowcount", len(part)) != len(part):  # deleted with its project
                raise StaleDataError("a dataset row of the upload is gone")
    for dataset, status in zip(datasets, statuses, strict=True):
        set_committed_value(dataset, "status", status)  # what the rows now hold


def _abandon(session: Session, ids: list[int]) -> None:
    session.rollback()  # the store forgets what this transaction wrote (store/transactions.py)
    try:
        session.execute(delete(Dataset).where(Dataset.id.in_(ids)))
        session.commit()
    except Exception:  # the error being raised matters more; start-up sweeps the rows
        session.rollback()


def sweep_abandoned_uploads(session: Session) -> int:
    """Delete the rows of uploads a crash interrupted (run at start-up, when no upload is in
    progress); how many."""
    result = session.execute(delete(Dataset).where(Dataset.status == UPLOADING))
    return int(getattr(result, "rowcount", 0) or 0)


@contextmanager
def writes_refused(session: Session) -> Iterator[None]:
    """Any SQL write through ``session`` inside raises RuntimeError: the long part of an upload
    must not take the database's write lock."""
    session.info[_NO_WRITES] = True
    try:
        yield
    finally:
        session.info.pop(_NO_WRITES, None)


def _refuse_flush(session: Session, _context: Any, _instances: Any) -> None:
    if session.info.get(_NO_WRITES) and (session.new or session.deleted or session.dirty):
        raise RuntimeError("an upload's long part tried to write to the database (a flush)")


def _refuse_statement(state: ORMExecuteState) -> None:
    if state.session.info.get(_NO_WRITES) and (
        state.is_insert or state.is_update or state.is_delete
    ):
        raise RuntimeError("an upload's long part tried to write to the database")


event.listen(Session, "before_flush", _refuse_flush)
event.listen(Session, "do_orm_execute", _refuse_statement)
