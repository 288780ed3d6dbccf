"""Executors: where runs execute. `inline` (default) is a thread pool in the server process;
numba kernels release the GIL, so the server stays responsive. `dask` sends runs to a Dask
distributed cluster whose workers read and write the database themselves."""

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.db.session import make_engine, make_session_factory
from app.jobs.runner import CancelToken, execute_run

log = logging.getLogger(__name__)


class Executor(Protocol):
    def submit(self, run_id: int) -> None: ...

    def cancel(self, run_id: int) -> None: ...

    def shutdown(self) -> None: ...


class InlineExecutor:
    def __init__(self, factory: sessionmaker[Session], workers: int) -> None:
        self.factory = factory
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run")
        self.tokens: dict[int, CancelToken] = {}
        self.lock = threading.Lock()

    def submit(self, run_id: int) -> None:
        token = CancelToken()
        with self.lock:
            self.tokens[run_id] = token
        future = self.pool.submit(execute_run, self.factory, run_id, token)
        future.add_done_callback(lambda _f: self._forget(run_id))

    def _forget(self, run_id: int) -> None:
        with self.lock:
            self.tokens.pop(run_id, None)

    def cancel(self, run_id: int) -> None:
        with self.lock:
            token = self.tokens.get(run_id)
        if token is not None:
            token.set()

    def shutdown(self) -> None:
        # Kernels cannot be interrupted mid-sweep; ask every run to stop at its next sweep.
        with self.lock:
            tokens = list(self.tokens.values())
        for token in tokens:
            token.set("interrupted: the server shut down during this run")
        self.pool.shutdown(wait=True, cancel_futures=True)


@lru_cache(maxsize=4)
def _worker_session_factory(database_url: str) -> sessionmaker[Session]:
    return make_session_factory(make_engine(database_url))


def run_on_dask_worker(database_url: str, run_id: int) -> None:
    """The task a Dask worker runs: it reads chunks and writes the result itself, so nothing
    large passes through the scheduler."""
    execute_run(_worker_session_factory(database_url), run_id)


class DaskExecutor:
    def __init__(self, scheduler_address: str, database_url: str) -> None:
        from distributed import Client

        self.database_url = database_url
        self.client = Client(scheduler_address, set_as_default=False, timeout="30s")

    def submit(self, run_id: int) -> None:
        from distributed import fire_and_forget

        future = self.client.submit(
            run_on_dask_worker,
            self.database_url,
            run_id,
            pure=False,
            key=f"run-{run_id}-{uuid.uuid4().hex[:8]}",
        )
        fire_and_forget(future)

    def cancel(self, run_id: int) -> None:
        """Workers see `cancel_requested` in the database at their next progress write."""

    def shutdown(self) -> None:
        self.client.close()


def make_executor(settings: Settings, factory: sessionmaker[Session]) -> Executor:
    if settings.jobs_executor == "dask":
        return DaskExecutor(settings.dask_scheduler, settings.database_url)
    return InlineExecutor(factory, settings.inline_workers)
