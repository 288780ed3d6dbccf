"""The array store at start-up: usable or not (and why), and swept of what a crash left."""

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import StoredArray
from app.store.array_store import ArrayStore, StoreUnavailable, sweep_orphans

log = logging.getLogger(__name__)

# A run's directory nothing refers to may be a Dask worker's result being written right now.
RUN_SWEEP_AGE_S = 3600.0


def sweep_array_store(factory: sessionmaker[Session], store: ArrayStore) -> str | None:
    """Check the store (write, read back, delete a probe) and remove the directories of uploads
    and runs that never committed; None when usable, else what is wrong (the server still
    starts: `/health` says it, and writes get a 503)."""
    try:
        store.check()
        with factory() as session:
            prefixes = {key.rsplit("/", 1)[0] for key in session.scalars(select(StoredArray.key))}
        removed = sweep_orphans(store, prefixes, runs_older_than_s=RUN_SWEEP_AGE_S)
    except StoreUnavailable as exc:
        log.error("the array store is not usable: %s", exc)
        return str(exc)
    if removed:
        log.info("array store: removed %d directories left by interrupted uploads or runs", removed)
    return None
