"""Executors: where runs execute. `inline` (default) is a thread pool in the server process;
numba kernels release the GIL, so the server stays responsive. `dask` (dask_executor.py) sends
runs to a Dask distributed cluster whose workers read and write the database themselves."""

import json
import logging
import threading
import time
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.jobs.execute.dask_executor import DaskExecutor, Places
from app.jobs.execute.fair_queue import FairQueue
from app.jobs.execute.job_owners import featurization_owner, featurization_owners, run_owner
from app.jobs.featurize.featurizer import (
    TableReader,
    execute_featurization,
    pending_featurizations,
)
from app.jobs.run.runner import (
    CancelToken,
    Notify,
    execute_run,
    fail_abandoned,
    new_worker_key,
    recover_interrupted_runs,
)

log = logging.getLogger(__name__)


class Executor(Protocol):
    notifies: bool  # whether `notify` hears of every change (else streams must poll)

    def resume(self) -> None:
        """At start: take up the runs and featurizations the previous process left."""

    def status(self) -> dict[str, Any]:
        """What the health endpoint reports about where runs execute."""

    def submit(self, run_id: int) -> None: ...

    def cancel(self, run_id: int) -> None: ...

    def submit_featurization(self, dataset_id: int) -> None: ...

    def submit_featurizations(self, dataset_ids: list[int]) -> None:
        """Many at once (a collection's images): their owners looked up together."""

    def shutdown(self) -> None: ...


FEATURIZE = "featurize"  # queue entries are run ids, or (FEATURIZE, dataset id)
# At shutdown, how long runs get to reach their next sweep and stop before they are marked
# interrupted (docker-compose.yml's stop_grace_period covers it and the server's own grace).
EXECUTOR_GRACE_S = 10.0
# How long featurizations get to stop at their next progress report once no run is left.
FEATURIZATION_GRACE_S = 1.0


class InlineExecutor:
    """Runs and featurizations on daemon threads in the server process, users taking turns:
    one user's jobs hold at most `per_user` of the `workers` threads (fair_queue.py).

    Daemon threads, not a ThreadPoolExecutor: the interpreter joins a pool's threads at exit,
    so one long kernel sweep would hold a stopping server hostage. Here shutdown asks every run
    to stop, waits a grace period, and marks what is still running as interrupted; it tells
    featurizations to stop and leaves them to be taken up again at the next start."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        workers: int,
        notify: Notify | None = None,
        grace_s: float = EXECUTOR_GRACE_S,
        chunk_rows: int = 65_536,
        per_user: int | None = None,
        read_table: TableReader | None = None,
        data_parallel_from: int | None = None,
    ) -> None:
        """``data_parallel_from``: tables of at least this many items fit over the store's
        chunks on this process's threads (run/data_parallel.py), not loaded whole."""
        self.notifies = notify is not None
        self.data_parallel_from = data_parallel_from
        self.read_table = read_table
        self.chunk_rows = chunk_rows
        self.factory = factory
        self.notify: Notify = notify or (lambda _run_id: None)
        self.grace_s = grace_s
        # Default: every worker but one, so another user's job never waits behind a burst.
        self.per_user = per_user or max(workers - 1, 1)
        self.queue: FairQueue[int | tuple[str, int]] = FairQueue(self.per_user)
        self.tokens: dict[int, CancelToken] = {}
        self.active: dict[int, str] = {}  # run id -> the worker key of its claim
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # featurizations stop at their next progress report
        self.threads = [
            threading.Thread(target=self._work, name=f"run-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self.threads:
            thread.start()

    def resume(self) -> None:
        # Runs left `running` died with the previous process; queued ones go again.
        for run_id in recover_interrupted_runs(self.factory):
            self.submit(run_id)
        for dataset_id in pending_featurizations(self.factory):
            self.submit_featurization(dataset_id)

    def status(self) -> dict[str, Any]:
        return {
            "executor": "inline",
            "workers": len(self.threads),
            "workers_per_user": self.per_user,
            "waiting": self.queue.waiting(),
        }

    def submit(self, run_id: int) -> None:
        with self.lock:
            self.tokens[run_id] = CancelToken()
        self.queue.put(run_owner(self.factory, run_id), run_id)

    def submit_featurization(self, dataset_id: int) -> None:
        self.queue.put(featurization_owner(self.factory, dataset_id), (FEATURIZE, dataset_id))

    def submit_featurizations(self, dataset_ids: list[int]) -> None:
        owners = featurization_owners(self.factory, dataset_ids)
        for dataset_id in dataset_ids:
            self.queue.put(owners.get(dataset_id), (FEATURIZE, dataset_id))

    def _work(self) -> None:
        while (taken := self.queue.get()) is not None:
            owner, entry = taken
            try:
                if isinstance(entry, tuple):
                    self._featurize(entry[1])
                else:
                    self._run(entry)
            finally:
                self.queue.done(owner)

    def _featurize(self, dataset_id: int) -> None:
        try:
            execute_featurization(
                self.factory, dataset_id, self.chunk_rows, self.stopping, self.read_table
            )
        except Exception:
            log.exception("dataset %s: the featurization job itself failed", dataset_id)

    def _run(self, run_id: int) -> None:
        key = new_worker_key()
        with self.lock:
            token = self.tokens.get(run_id) or CancelToken()
            self.active[run_id] = key
        try:
            if not token.is_set():
                execute_run(
                    self.factory,
                    run_id,
                    token,
                    self.notify,
                    key,
                    data_parallel_from=self.data_parallel_from,
                )
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
        self.stopping.set()
        self.queue.close()
        self._wait_for_runs()
        with self.lock:
            stuck = dict(self.active)
        fail_abandoned(self.factory, stuck, reason)

    def _wait_for_runs(self) -> None:
        """Until every worker is done, but no longer than the runs' grace, and no longer than
        FEATURIZATION_GRACE_S once no run is left: a featurization stops at its next
        progress report, which may be a block of seconds away; its work is resumed at the next
        start, so nothing is lost by not waiting for it (its daemon threads end with the
        process, its unrecorded arrays are swept at start)."""
        started = time.monotonic()
        while any(thread.is_alive() for thread in self.threads):
            waited = time.monotonic() - started
            with self.lock:
                runs = bool(self.active)
            if waited >= self.grace_s or (not runs and waited >= FEATURIZATION_GRACE_S):
                return
            time.sleep(0.02)


def make_executor(
    settings: Settings,
    factory: sessionmaker[Session],
    notify: Notify | None = None,
    read_table: TableReader | None = None,
) -> Executor:
    """`notify(run_id)` is called whenever a run's row changes (inline runs only: Dask workers
    are other processes, whose changes progress streams see by polling). `read_table` reads a
    table imported by reference in the background (`featurizer.TableReader`)."""
    if settings.jobs_executor == "dask":
        return DaskExecutor(
            settings.dask_scheduler,
            Places(
                settings.database_url,
                settings.array_store,
                json.dumps(settings.array_store_options, sort_keys=True),
                settings.distributed_min_items,
                json.dumps(settings.import_sources, sort_keys=True),
            ),
            settings.chunk_rows,
            factory,
            retry_s=settings.dask_retry_seconds,
            read_table=read_table,
            workers_expected=settings.dask_workers_expected,
        )
    return InlineExecutor(
        factory,
        settings.inline_workers,
        notify,
        chunk_rows=settings.chunk_rows,
        per_user=settings.inline_workers_per_user,
        read_table=read_table,
        data_parallel_from=settings.distributed_min_items,
    )
