"""The array store's state: checked and swept of what a crash left at start-up, then kept
current by every write that fails and by a probe when the last look is old."""

import logging
import threading
import time

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


# How old the last look at the store may be before `/health` probes it again (a write, a read
# back and a delete of a few bytes).
PROBE_EVERY_S = 30.0


class StoreHealth:
    """The array store as last seen: by the start-up check, by a write that failed (answered
    503), or by a probe that ``current`` makes when the last look is older than
    ``PROBE_EVERY_S``. A store that broke after start-up (made read-only, unmounted, its
    bucket gone) is reported as such, and one that was mended is reported usable again."""

    def __init__(self, store: ArrayStore, problem: str | None) -> None:
        self.store = store
        self.problem = problem
        self.seen_at = time.monotonic()
        self._probing = threading.Lock()

    def failed(self, problem: str) -> None:
        self.problem, self.seen_at = problem, time.monotonic()

    def current(self) -> tuple[str | None, float]:
        """The problem (None: usable) and how many seconds ago it was seen. One probe at a
        time: others meanwhile get the last look."""
        if time.monotonic() - self.seen_at >= PROBE_EVERY_S and self._probing.acquire(False):
            try:
                self.store.check()
                self.problem = None
            except StoreUnavailable as exc:
                log.error("the array store is not usable: %s", exc)
                self.problem = str(exc)
            finally:
                self.seen_at = time.monotonic()
                self._probing.release()
        return self.problem, time.monotonic() - self.seen_at
