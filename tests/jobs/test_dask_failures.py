"""Runs on Dask that fail say what happened: a run estimated past its worker's memory fails
before reading anything, with the estimate and the limit; a run taken over after its worker was
restarted for memory fails at once with that reason instead of starting again from scratch; a
run taken over after another death goes on, its attempt counted and its start kept; /health
counts the workers against those expected and names a worker that cannot run the app's tasks."""

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Run, RunResult
from app.jobs.execute.dask_executor import KEY_PREFIX, MEMORY_RESTARTS, run_on_dask_worker
from app.main import create_app
from tests.api.test_runs import start, wait
from tests.conftest import _empty_tables
from tests.jobs.test_dask_restarts import _iris_dataset, _run, _until

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.db


@pytest.fixture
def dask_app(db_engine: Engine, settings: Settings) -> Iterator[Callable[..., Any]]:
    """A TestClient on an app whose runs go to an in-process cluster (its workers' memory
    limit and the workers expected as given)."""
    stack: list[Any] = []

    def make(
        memory_limit: str | None = None, expected: int | None = None, workers: int = 1
    ) -> TestClient:
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=False,
            protocol="tcp://",
            dashboard_address=None,
            host="127.0.0.1",
            memory_limit=memory_limit,
        )
        stack.append(cluster)
        app_settings = settings.model_copy(
            update={
                "jobs_executor": "dask",
                "dask_scheduler": cluster.scheduler_address,
                "dask_retry_seconds": 0.5,
                "dask_workers_expected": expected,
            }
        )
        client = TestClient(create_app(app_settings))
        client.cluster = cluster  # type: ignore[attr-defined]  # to scale it
        client.__enter__()
        stack.append(client)
        _until(lambda: client.get("/api/v1/health").json()["jobs"]["connected"])
        return client

    # The in-process worker shares this process's memory: it must neither pause nor spill.
    with dask.config.set(
        {
            "distributed.worker.memory.pause": False,
            "distributed.worker.memory.spill": False,
            "distributed.worker.memory.target": False,
            "distributed.worker.memory.terminate": False,
        }
    ):
        yield make
    for item in reversed(stack):
        if isinstance(item, TestClient):
            item.__exit__(None, None, None)
        else:
            item.close()
    _empty_tables(db_engine)


def test_a_run_past_its_workers_memory_fails_before_reading_anything(
    dask_app: Callable[..., TestClient],
) -> None:
    # This process (the worker's) already holds more than 100 MiB: no run fits.
    client = dask_app(memory_limit="100MiB")
    headers, dataset_id = _iris_dataset(client)
    run_id = start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]
    run = wait(client, headers, run_id, timeout=600)
    assert run["status"] == "failed"
    assert run["error"].startswith("out of memory on a worker: this run needs about ")
    assert "GiB per worker at 150 items; workers have 0.1 GiB" in run["error"]
    assert run["attempt"] == 1


def _finished_run(
    dask_app: Callable[..., TestClient], session: Session
) -> tuple[TestClient, dict[str, str], int, Any]:
    """A client on a fresh cluster, its headers, a CEC run it finished, and when that started."""
    client = dask_app()
    headers, dataset_id = _iris_dataset(client)
    run_id = start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]
    wait(client, headers, run_id, timeout=600)
    return client, headers, run_id, _run(session, run_id).started_at


def _taken_over(
    client: TestClient, session: Session, run_id: int, dead_worker: str
) -> tuple[Run, Any]:
    """The run as a worker death leaves it (running, claimed by its task's key on a worker now
    gone), then its task started again as the scheduler would."""
    key = f"{KEY_PREFIX}{run_id}-0badf00d"
    started = session.get(Run, run_id)
    assert started is not None
    session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(status="running", worker_key=key, worker_address=dead_worker, attempt=1)
    )
    session.execute(RunResult.__table__.delete().where(RunResult.run_id == run_id))
    session.commit()
    executor = client.app.state.executor  # type: ignore[attr-defined]
    future = executor.client.submit(run_on_dask_worker, executor.places, run_id, key, key=key)
    future.result(timeout=600)
    return _run(session, run_id), _run(session, run_id).started_at


def test_a_run_whose_worker_was_restarted_for_memory_fails_at_once_when_taken_over(
    dask_app: Callable[..., TestClient], session: Session
) -> None:
    client, _, run_id, before = _finished_run(dask_app, session)
    executor = client.app.state.executor  # type: ignore[attr-defined]
    # What a nanny sends the scheduler when it restarts a worker past its memory limit.
    executor.client.log_event(
        MEMORY_RESTARTS, {"worker": "tcp://127.0.0.1:9", "pid": 1, "rss": 3 * 2**30}
    )
    _until(lambda: bool(executor.client.get_events(MEMORY_RESTARTS)), timeout=30)
    run, started_at = _taken_over(client, session, run_id, "tcp://127.0.0.1:9")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.startswith("out of memory on a worker: the worker running this run")
    assert "(tcp://127.0.0.1:9) used 3.00 GiB" in run.error
    assert run.attempt == 2 and started_at == before


def test_a_run_taken_over_after_another_death_goes_on_as_attempt_two(
    dask_app: Callable[..., TestClient], session: Session
) -> None:
    client, headers, run_id, before = _finished_run(dask_app, session)
    run, started_at = _taken_over(client, session, run_id, "tcp://127.0.0.1:10")
    assert (run.status, run.error, run.attempt) == ("succeeded", None, 2)
    assert started_at == before  # the run started then, not when it was taken over
    body = client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
    assert body["attempt"] == 2


def test_health_counts_the_workers_against_those_expected(
    dask_app: Callable[..., TestClient],
) -> None:
    client = dask_app(expected=2)
    jobs = client.get("/api/v1/health").json()["jobs"]
    assert (jobs["workers"], jobs["workers_expected"], jobs["workers_missing"]) == (1, 2, 1)
    assert jobs["workers_unable_to_run_the_app"] == []


def test_health_names_a_worker_that_cannot_import_the_app(
    dask_app: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A worker started where another package named `app` comes first on its path."""
    client = dask_app()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("__version__ = 'someone else'\n")
    executor = client.app.state.executor  # type: ignore[attr-defined]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", executor.scheduler_address,
         "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _until(lambda: client.get("/api/v1/health").json()["jobs"].get("workers") == 2, 120)
        deadline = time.monotonic() + 120
        while True:
            executor.probe_workers()
            unfit = client.get("/api/v1/health").json()["jobs"]["workers_unable_to_run_the_app"]
            if unfit or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert len(unfit) == 1
        assert "app" in unfit[0]["error"]
    finally:
        worker.terminate()
        worker.wait(timeout=60)


def test_a_run_queued_on_a_scheduler_with_no_worker_says_so_then_starts_when_one_joins(
    dask_app: Callable[..., TestClient],
) -> None:
    client = dask_app(workers=0)
    headers, dataset_id = _iris_dataset(client)
    run_id = start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]
    executor = client.app.state.executor  # type: ignore[attr-defined]
    _until(
        lambda: (
            client.get(f"/api/v1/runs/{run_id}", headers=headers).json()["waiting_for"]
            == "the Dask scheduler has no worker; the run starts once one joins"
        ),
        timeout=60,
    )
    assert (
        client.get("/api/v1/health")
        .json()["jobs"]["detail"]
        .startswith("the scheduler has no worker")
    )
    client.cluster.scale(1)  # type: ignore[attr-defined]
    executor.reconcile()
    run = wait(client, headers, run_id, timeout=600)
    assert (run["status"], run["error"], run["waiting_for"]) == ("succeeded", None, None)


HOLD_RUNS = """
# Preloaded by the worker that will be killed: every run it claims stays running (claimed,
# its worker recorded) until the process dies.
import time

from app.jobs.run import runner


def _held(*args, **kwargs):
    while True:
        time.sleep(1)


runner._fit_and_store = _held
"""


def test_a_worker_killed_mid_run_shows_on_health_and_the_run_goes_on_elsewhere(
    dask_app: Callable[..., TestClient], session: Session, tmp_path: Path
) -> None:
    """kill -9 on the process of the worker running a run (no nanny: it stays gone, as a lost
    machine would): /health counts one worker of the two expected, and the scheduler starts
    the run's task again on the other worker, which takes it over as attempt 2 and stores its
    result once."""
    client = dask_app(expected=2)
    executor = client.app.state.executor  # type: ignore[attr-defined]
    (tmp_path / "hold_runs.py").write_text(HOLD_RUNS)
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", executor.scheduler_address,
         "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
         "--name", "doomed", "--preload", str(tmp_path / "hold_runs.py")],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    release = distributed.Event("release-the-in-process-worker", client=executor.client)
    try:
        _until(lambda: client.get("/api/v1/health").json()["jobs"]["workers"] == 2, 120)
        workers = executor.client.scheduler_info()["workers"]
        doomed = next(a for a, w in workers.items() if w.get("name") == "doomed")
        here = next(a for a in workers if a != doomed)
        # The in-process worker's one thread is kept busy, so the run goes to the doomed one.
        blocker = executor.client.submit(
            release.wait, 600, workers=[here], pure=False, allow_other_workers=False
        )
        headers, dataset_id = _iris_dataset(client)
        run_id = start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]
        _until(lambda: _run(session, run_id).worker_address == doomed, 120)
        assert _run(session, run_id).status == "running"

        worker.kill()  # SIGKILL: no goodbye to the scheduler
        worker.wait(timeout=60)
        _until(lambda: client.get("/api/v1/health").json()["jobs"]["workers"] == 1, 60)
        jobs = client.get("/api/v1/health").json()["jobs"]
        assert (jobs["workers"], jobs["workers_expected"], jobs["workers_missing"]) == (1, 2, 1)

        release.set()
        blocker.result(timeout=60)
        run = wait(client, headers, run_id, timeout=600)
        assert (run["status"], run["error"], run["attempt"]) == ("succeeded", None, 2)
        assert _run(session, run_id).worker_address == here
        result = client.get(f"/api/v1/runs/{run_id}/result", headers=headers)
        assert result.status_code == 200 and result.json()["metrics"]["n_clusters"] == 3
        session.expire_all()
        assert session.query(RunResult).filter(RunResult.run_id == run_id).count() == 1
    finally:
        release.set()
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=60)
