"""Runs on a Dask distributed cluster, whose workers read and write the database themselves.

Runs outlive the app: a task is submitted fire-and-forget under a key that is also the run's
claim (`worker_key`), so after a restart the app asks the scheduler which of its runs' tasks it
still knows. A known task is left alone (its worker records the result, once); a run whose task
the scheduler no longer knows is failed with the reason, or resubmitted while still queued.

The app does not need the scheduler to start: a supervisor thread connects (and reconnects),
reconciles, and submits what waited meanwhile; `status()` tells the health endpoint."""

import json
import logging
import threading
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Run
from app.db.session import make_engine, make_session_factory, session_scope
from app.jobs.execute import waiting
from app.jobs.execute.job_owners import active_jobs, featurization_owner, run_owner
from app.jobs.featurize.featurizer import (
    TableReader,
    execute_featurization,
    pending_featurizations,
)
from app.jobs.run.runner import execute_run, fail_abandoned, recover_interrupted_runs
from app.store.array_store import ArrayStore
from app.store.sources.binding import bind_sources
from app.store.transactions import bind_store

log = logging.getLogger(__name__)

KEY_PREFIX = "dask-run-"  # run claims made by Dask tasks (the rest died with their process)
LOST = (
    "lost: the Dask scheduler no longer knows this run's task "
    "(the scheduler restarted, or the task failed on every worker)"
)
# Task states in which the task may still run and write its result.
ALIVE = {"released", "waiting", "no-worker", "queued", "processing", "memory"}


def missing_extra_message() -> str:
    return (
        "JOBS_EXECUTOR=dask needs the Dask extra: pip install 'clustering-workbench[dask]' "
        "(or set JOBS_EXECUTOR=inline)"
    )


@dataclass(frozen=True)
class Places:
    """Where a worker finds the database and the array store: all a task needs besides ids."""

    database_url: str
    array_store: str
    array_store_options: str = "{}"  # JSON, so the dataclass stays hashable
    # Tables of at least this many items fit data-parallel (app/jobs/run/data_parallel.py).
    distributed_min_items: int | None = None
    import_sources: str = "{}"  # JSON: where datasets imported by reference are read

    def without_limits(self) -> "Places":
        """Only where things are: one session factory per database and store."""
        return Places(
            self.database_url,
            self.array_store,
            self.array_store_options,
            import_sources=self.import_sources,
        )


@lru_cache(maxsize=4)
def _worker_session_factory(places: Places) -> sessionmaker[Session]:
    factory = make_session_factory(make_engine(places.database_url))
    bind_store(factory, ArrayStore(places.array_store, json.loads(places.array_store_options)))
    bind_sources(factory, json.loads(places.import_sources))
    return factory


def run_on_dask_worker(places: Places, run_id: int, key: str) -> None:
    """The task a Dask worker runs: it reads chunks from the store and writes the result
    itself, so nothing large passes through the scheduler. `key` is the task's own key, the
    run's claim."""
    from distributed import get_worker

    execute_run(
        _worker_session_factory(places.without_limits()),
        run_id,
        key=key,
        data_parallel_from=places.distributed_min_items,
        worker_address=get_worker().address,
        why_died=killed_for_memory,
    )


MEMORY_RESTARTS = "worker-restart-memory"  # the topic of a nanny's restart for memory


def killed_for_memory(address: str | None) -> str | None:
    """When the worker at ``address`` was restarted by its nanny for passing its memory limit
    (the scheduler's events say so), the run's failure in words; else None."""
    if address is None:
        return None
    from distributed import get_worker

    worker = get_worker()
    try:
        events = worker.client.get_events(MEMORY_RESTARTS)
    except Exception:  # the scheduler did not answer: start the run again
        return None
    for _, event in reversed(list(events)):
        if isinstance(event, dict) and event.get("worker") == address:
            limit = worker.memory_manager.memory_limit or 0
            used = float(event.get("rss", 0)) / 1024**3
            return (
                f"out of memory on a worker: the worker running this run ({address}) used "
                f"{used:.2f} GiB, past 95% of its {limit / 1024**3:.1f} GiB memory_limit, and "
                "its nanny restarted it; started again the run would die the same way. Give "
                "the Dask workers more memory, or run on fewer items"
            )
    return None


def featurize_on_dask_worker(
    places: Places, dataset_id: int, chunk_rows: int, read_table: TableReader | None
) -> None:
    """``read_table`` is a module-level function: it travels by name and the worker imports it."""
    execute_featurization(
        _worker_session_factory(places.without_limits()),
        dataset_id,
        chunk_rows,
        read_table=read_table,
    )


def task_states(dask_scheduler: Any, keys: list[str]) -> dict[str, str]:
    """Runs on the scheduler: the state of each of these tasks it still knows."""
    return {k: dask_scheduler.tasks[k].state for k in keys if k in dask_scheduler.tasks}


class DaskExecutor:
    notifies = False  # workers are other processes: progress streams poll

    def __init__(
        self,
        scheduler_address: str,
        places: Places,
        chunk_rows: int,
        factory: sessionmaker[Session],
        retry_s: float = 5.0,
        reconcile_s: float = 30.0,
        read_table: TableReader | None = None,
        workers_expected: int | None = None,
    ) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(missing_extra_message()) from exc
        self.scheduler_address = scheduler_address
        self.places = places
        self.chunk_rows = chunk_rows
        self.factory = factory
        self.read_table = read_table
        self.retry_s = retry_s
        self.reconcile_s = reconcile_s
        self.workers_expected = workers_expected
        self.unfit_workers: dict[str, str] = {}  # address -> why it cannot run the app's tasks
        self.client: Any = None
        self.lock = threading.RLock()  # one of submit / reconcile at a time
        self.featurizations: list[int] = []  # waiting for a scheduler
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="dask-supervisor", daemon=True)

    # The Executor protocol

    def resume(self) -> None:
        """After start: runs claimed in this process's predecessor (inline) died with it; Dask
        runs and queued runs are reconciled once the scheduler answers."""
        recover_interrupted_runs(self.factory, remote_prefix=KEY_PREFIX)
        with self.lock:
            self.featurizations.extend(pending_featurizations(self.factory))
        self._thread.start()

    def submit(self, run_id: int) -> None:
        with self.lock:
            if self._connected():
                try:
                    self._submit_run(run_id)
                except Exception:  # the scheduler went away mid-call: the next reconcile sends it
                    log.warning("run %s: not submitted now; retried on reconnection", run_id)
            else:
                log.warning(
                    "run %s waits for the Dask scheduler at %s", run_id, self.scheduler_address
                )

    def submit_featurization(self, dataset_id: int) -> None:
        with self.lock:
            self.featurizations.append(dataset_id)
        self._wake.set()

    def submit_featurizations(self, dataset_ids: list[int]) -> None:
        with self.lock:
            self.featurizations.extend(dataset_ids)
        self._wake.set()

    def cancel(self, run_id: int) -> None:
        """Workers see `cancel_requested` in the database at their next progress write."""

    def shutdown(self) -> None:
        waiting.set_reason(None)  # this executor's view goes with it
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.retry_s + 5)
        with self.lock:
            if self.client is not None:
                self.client.close()
                self.client = None

    def status(self) -> dict[str, Any]:
        """For the health endpoint: whether the scheduler answers, and what waits for it."""
        connected = self._connected()
        waiting = 0
        if not connected:
            with session_scope(self.factory) as session:
                waiting = len(session.scalars(select(Run.id).where(Run.status == "queued")).all())
        status: dict[str, Any] = {
            "executor": "dask",
            "scheduler": self.scheduler_address,
            "connected": connected,
            "runs_waiting_for_scheduler": waiting,
        }
        if connected:
            status.update(self._workers_status())
        return status

    def _workers_status(self) -> dict[str, Any]:
        """The workers the scheduler has (against the number expected), and those that cannot
        run the app's tasks (found by `probe_workers`)."""
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # the scheduler went away mid-call: the next status says so
            return {}
        status: dict[str, Any] = {
            "workers": len(workers),
            "workers_expected": self.workers_expected,
            "workers_missing": max(0, (self.workers_expected or 0) - len(workers)),
            "worker_memory_limits": sorted(
                int(w.get("memory_limit") or 0) for w in workers.values()
            ),
            "workers_unable_to_run_the_app": [
                {"worker": address, "error": error}
                for address, error in sorted(self.unfit_workers.items())
                if address in workers
            ],
        }
        if not workers:
            status["detail"] = "the scheduler has no worker: runs wait until one joins"
        return status

    def _why_runs_wait(self) -> str | None:
        """What stops runs from starting on a connected scheduler (None: nothing)."""
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:
            return None  # the next round says
        if not workers:
            return "the Dask scheduler has no worker; the run starts once one joins"
        unfit = [a for a in workers if a in self.unfit_workers]
        if len(unfit) == len(workers):
            return (
                f"no Dask worker can run the app's tasks ({self.unfit_workers[unfit[0]]}); "
                "the run starts once one can"
            )
        return None

    def probe_workers(self) -> None:
        """Ask every worker to import the app (`worker_probe.py`); remember those that fail
        (the supervisor does it at every reconciliation)."""
        from app.jobs.execute.worker_probe import app_version

        answers = self.client.run(app_version, on_error="return")
        unfit = {}
        for address, answer in answers.items():
            if isinstance(answer, BaseException):
                unfit[address] = f"{type(answer).__name__}: {answer}"
            elif answer != app_version():
                unfit[address] = (
                    f"the worker runs app version {answer}, this server {app_version()}"
                )
        for address, error in unfit.items():
            if address not in self.unfit_workers:
                log.error("Dask worker %s cannot run the app's tasks: %s", address, error)
        self.unfit_workers = unfit

    # Connection and reconciliation

    def reconcile(self) -> None:
        """Compare the runs in flight with the scheduler's tasks now (the supervisor does it
        on every (re)connection and every `reconcile_s`)."""
        with self.lock:
            if self._connected():
                self._reconcile()

    def _connected(self) -> bool:
        return self.client is not None and self.client.status == "running"

    def _supervise(self) -> None:
        warned = False
        while not self._stop.is_set():
            try:
                if not self._connected():
                    self._connect()
                with self.lock:
                    self._reconcile()
                    self._submit_featurizations()
                self.probe_workers()
                waiting.set_reason(self._why_runs_wait())
                if warned:
                    log.info("Dask scheduler reached; waiting runs are submitted")
                    warned = False
            except Exception as exc:
                waiting.set_reason(
                    f"no Dask scheduler answers at {self.scheduler_address}; the run starts "
                    "once one does (the operator's /health says the same)"
                )
                if not warned:
                    log.warning(
                        "no Dask scheduler at %s (%s); runs wait for one, retrying every %.0f s",
                        self.scheduler_address,
                        exc,
                        self.retry_s,
                    )
                    warned = True
                self._wake.wait(self.retry_s)
                self._wake.clear()
                continue
            self._wake.wait(self.reconcile_s)
            self._wake.clear()

    def _connect(self) -> None:
        from distributed import Client

        with self.lock:
            if self.client is not None:
                self.client.close()
                self.client = None
        from app.jobs.execute.worker_heap import HeapForArrays

        client = Client(self.scheduler_address, set_as_default=False, timeout=f"{self.retry_s}s")
        client.register_plugin(HeapForArrays())  # on every worker, now and later; by name, once
        with self.lock:
            self.client = client
        log.info("connected to the Dask scheduler at %s", self.scheduler_address)

    def _reconcile(self) -> None:
        with session_scope(self.factory) as session:
            rows = session.execute(
                select(Run.id, Run.status, Run.worker_key)
                .where(Run.status.in_(("queued", "running")))
                .order_by(Run.id)
            ).all()
        keys = [k for _, _, k in rows if k and k.startswith(KEY_PREFIX)]
        states: dict[str, str] = (
            self.client.run_on_scheduler(task_states, keys=keys) if keys else {}
        )
        for run_id, status, key in rows:
            alive = key is not None and states.get(key) in ALIVE
            if status == "queued" and not alive:
                self._submit_run(run_id)
            elif status == "running" and key is not None and not alive:
                # Only Dask claims are left running at start; a known task is still at work.
                fail_abandoned(self.factory, {run_id: key}, LOST)
                log.warning("run %s: %s", run_id, LOST)

    def _submit_run(self, run_id: int) -> None:
        """Name the task, record the name on the queued run, then hand it to the scheduler."""
        from distributed import fire_and_forget

        key = f"{KEY_PREFIX}{run_id}-{uuid.uuid4().hex[:8]}"
        with session_scope(self.factory) as session:
            named = session.execute(
                update(Run).where(Run.id == run_id, Run.status == "queued").values(worker_key=key)
            )
            if not named.rowcount:  # type: ignore[attr-defined]
                return  # cancelled or deleted meanwhile
        future = self.client.submit(
            run_on_dask_worker,
            self.places,
            run_id,
            key,
            key=key,
            pure=False,
            priority=self._turn(run_owner(self.factory, run_id)),
        )
        fire_and_forget(future)

    def _turn(self, owner: int | None) -> int:
        """The Dask priority of an owner's next job: lower the more they already have queued
        or running, so with the workers busy another user's first job goes before one user's
        burst (the scheduler starts higher priorities first)."""
        with session_scope(self.factory) as session:
            return -active_jobs(session, owner)

    def _submit_featurizations(self) -> None:
        from distributed import fire_and_forget

        while self.featurizations:
            dataset_id = self.featurizations[0]
            future = self.client.submit(
                featurize_on_dask_worker,
                self.places,
                dataset_id,
                self.chunk_rows,
                self.read_table,
                pure=False,
                key=f"featurize-{dataset_id}-{uuid.uuid4().hex[:8]}",
                priority=self._turn(featurization_owner(self.factory, dataset_id)),
            )
            fire_and_forget(future)
            self.featurizations.pop(0)
