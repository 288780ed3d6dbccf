"""The array store follows the SQL transaction it is written in.

A session made by a factory that `bind_store` prepared knows its store (`store_of`). What a
transaction writes to the store is removed again if the transaction rolls back (a refused
upload, a failed run); what it deletes (`doom`) is removed from the store only once the
transaction has committed, so a rolled-back delete loses nothing. A crash between the two
leaves at worst an unreferenced directory, which start-up sweeps (`array_store.sweep_orphans`).
"""

import logging
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from app.store.array_store import ArrayStore, StoreUnavailable

log = logging.getLogger(__name__)

_STORE = "array_store"
_WRITTEN = "array_store_written"  # keys and new prefixes written in the open transaction
_DOOMED = "array_store_doomed"  # prefixes and keys to delete once it commits
NEW_PREFIXES = "array_store_new_prefixes"  # owners' directories first made in it


def bind_store(factory: sessionmaker[Session], store: ArrayStore) -> None:
    """Sessions from ``factory`` read and write ``store`` (and clean up after themselves)."""
    info: dict[str, Any] = factory.kw.setdefault("info", {})
    info[_STORE] = store
    if not event.contains(factory, "after_commit", _after_commit):
        event.listen(factory, "after_commit", _after_commit)
        event.listen(factory, "after_transaction_end", _after_transaction_end)


def store_of(session: Session) -> ArrayStore:
    store = session.info.get(_STORE)
    if store is None:
        raise RuntimeError("this session's factory has no array store (app.store.bind_store)")
    return store


def written(session: Session, path: str) -> None:
    """``path`` (an array's key or a new directory) was written in this transaction."""
    session.info.setdefault(_WRITTEN, []).append(path)


def doom(session: Session, path: str) -> None:
    """Delete ``path`` from the store when this transaction commits."""
    session.info.setdefault(_DOOMED, []).append(path)


def _after_commit(session: Session) -> None:
    session.info.pop(_WRITTEN, None)
    session.info.pop(NEW_PREFIXES, None)
    doomed = session.info.pop(_DOOMED, [])
    _remove(session, doomed, "deleted")


def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is not None:
        return  # a savepoint or subtransaction: the outer transaction decides
    session.info.pop(_DOOMED, None)
    session.info.pop(NEW_PREFIXES, None)
    _remove(session, session.info.pop(_WRITTEN, []), "rolled back")


def _remove(session: Session, paths: list[str], why: str) -> None:
    if not paths:
        return
    store = store_of(session)
    for path in reversed(paths):
        log.debug("removing %s (%s) from the array store", path, why)
        try:
            store.delete(path)
        except StoreUnavailable as exc:  # swept at the next start-up
            log.warning("could not remove %s (%s) from the array store: %s", path, why, exc)
