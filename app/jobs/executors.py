"""Executors: where runs execute. `inline` (default) is a thread pool in the server process;
numba kernels release the GIL, so the server stays responsive. `dask` sends runs to a Dask
distributed cluster whose workers read and write the database themselves."""

import logging
import queue
import threading
import time
import uuid
from functools import lru_cache
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.db.session import make_engine, make_session_factory
from app.jobs.featurizer import execute_featurization
from app.jobs.runner import CancelToken, Notify, execute_run, fail_abandoned, new_worker_key

log = logging.getLogger(__name__)


class Executor(Protocol):
    notifies: bool  # whether `notify` hears of every change (else streams must poll)

    def submit(self, run_id: int) -> None: ...

    def cancel(self, run_id: int) -> None: ...

    def submit_featurization(self, dataset_id: int) -> None: ...

    def shutdown(self) -> None: ...


FEATURIZE = "featurize"  # queue entries are run ids, or (FEATURIZE, dataset id)


class InlineExecutor:
    """Runs on daemon threads in the server process.

    Daemon threads, not a ThreadPoolExecutor: the interpreter joins a pool's threads at exit,
    so one long kernel sweep would hold a stopping server hostage. Here shutdown asks every run
    to stop, waits a grace period, and marks what is still running as interrupted."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        workers: int,
        notify: Notify | None = None,
        grace_s: float = 10.0,
        chunk_rows: int = 65_536,
    ) -> None:
        self.notifies = notify is not None
        self.chunk_rows = chunk_rows
        self.factory = factory
        self.notify: Notify = notify or (lambda _run_id: None)
        self.grace_s = grace_s
        self.queue: queue.Queue[int | tuple[str, int] | None] = queue.Queue()
        self.tokens: dict[int, CancelToken] = {}
        self.active: dict[int, str] = {}  # run id -> the worker key of its claim
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._work, name=f"run-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, run_id: int) -> None:
        with self.lock:
            self.tokens[run_id] = CancelToken()
        self.queue.put(run_id)

    def submit_featurization(self, dataset_id: int) -> None:
        self.queue.put((FEATURIZE, dataset_id))

    def _work(self) -> None:
        while (entry := self.queue.get()) is not None:
            if isinstance(entry, tuple):
                self._featurize(entry[1])
            else:
                self._run(entry)

    def _featurize(self, dataset_id: int) -> None:
        try:
            execute_featurization(self.factory, dataset_id, self.chunk_rows)
        except Exception:
            log.exception("dataset %s: the featurization job itself failed", dataset_id)

    def _run(self, run_id: int) -> None:
        key = new_worker_key()
        with self.lock:
            token = self.tokens.get(run_id) or CancelToken()
            self.active[run_id] = key
        try:
            if not token.is_set():
                execute_run(self.factory, run_id, token, self.notify, key)
        except Exception:
            log.exception("run %s: the runner itself failed", run_id)
        finally:
            # Whatever happened above, the run must not stay `running` without a worker.
            try:
                fail_abandoned(self.factory, {run_id: key}, "the worker ended without a result")
            except Exception:
                log.exception("run %s: left for start-up recovery", run_id)
            self.notify(run_id)
            with self.lock:
                self.tokens.pop(run_id, None)
                self.active.pop(run_id, None)

    def cancel(self, run_id: int) -> None:
        with self.lock:
            token = self.tokens.get(run_id)
        if token is not None:
            token.set()

    def shutdown(self) -> None:
        # Kernels cannot be interrupted mid-sweep; ask every run to stop at its next sweep.
        reason = "interrupted: the server shut down during this run"
        with self.lock:
            tokens = list(self.tokens.values())
        for token in tokens:
            token.set(reason)
        for _ in self.threads:
            self.queue.put(None)
        deadline = time.monotonic() + self.grace_s
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        with self.lock:
            stuck = dict(self.active)
        fail_abandoned(self.factory, stuck, reason)


@lru_cache(maxsize=4)
def _worker_session_factory(database_url: str) -> sessionmaker[Session]:
    return make_session_factory(make_engine(database_url))


def run_on_dask_worker(database_url: str, run_id: int) -> None:
    """The task a Dask worker runs: it reads chunks and writes the result itself, so nothing
    large passes through the scheduler."""
    execute_run(_worker_session_factory(database_url), run_id)


def featurize_on_dask_worker(database_url: str, dataset_id: int, chunk_rows: int) -> None:
    execute_featurization(_worker_session_factory(database_url), dataset_id, chunk_rows)


class DaskExecutor:
    def __init__(self, scheduler_address: str, database_url: str, chunk_rows: int) -> None:
        from distributed import Client

        self.chunk_rows = chunk_rows
        self.notifies = False
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

    def submit_featurization(self, dataset_id: int) -> None:
        from distributed import fire_and_forget

        future = self.client.submit(
            featurize_on_dask_worker,
            self.database_url,
            dataset_id,
            self.chunk_rows,
            pure=False,
            key=f"featurize-{dataset_id}-{uuid.uuid4().hex[:8]}",
        )
        fire_and_forget(future)

    def cancel(self, run_id: int) -> None:
        """Workers see `cancel_requested` in the database at their next progress write."""

    def shutdown(self) -> None:
        self.client.close()


def make_executor(
    settings: Settings, factory: sessionmaker[Session], notify: Notify | None = None
) -> Executor:
    """`notify(run_id)` is called whenever a run's row changes (inline runs only: Dask workers
    are other processes, whose changes progress streams see by polling)."""
    if settings.jobs_executor == "dask":
        return DaskExecutor(settings.dask_scheduler, settings.database_url, settings.chunk_rows)
    return InlineExecutor(factory, settings.inline_workers, notify, chunk_rows=settings.chunk_rows)
