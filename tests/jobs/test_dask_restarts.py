"""Runs on a real (in-process) Dask cluster survive an app restart: a run whose task the
scheduler still knows stays running and records its result once; a run the scheduler forgot is
failed with the reason; the app starts without a scheduler, says runs wait, and submits them
when one appears."""

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import load_iris
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Run, RunResult
from app.jobs.execute.dask_executor import KEY_PREFIX, LOST
from app.jobs.execute.worker_heap import HeapForArrays
from app.jobs.run import runner
from app.jobs.run.runner import INTERRUPTED
from app.main import create_app
from benchmarks._server import free_port
from tests.api.test_runs import start, upload_csv, wait
from tests.conftest import _empty_tables, admin_project

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.db


def _cluster(port: int = 0) -> Any:
    # processes=False: the worker runs in this process, so a test can hold a run mid-fit.
    return distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tcp://",  # a real port (processes=False would default to inproc://)
        dashboard_address=None,
        scheduler_port=port,
        host="127.0.0.1",
    )


@pytest.fixture
def dask_settings(db_engine: Engine, settings: Settings) -> Iterator[Callable[[str], Settings]]:
    def make(address: str) -> Settings:
        return settings.model_copy(
            update={"jobs_executor": "dask", "dask_scheduler": address, "dask_retry_seconds": 0.5}
        )

    yield make
    _empty_tables(db_engine)


# Generous deadlines, not timings: a changed engine recompiles its kernels on the first fit.
def _until(condition: Callable[[], bool], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _run(session: Session, run_id: int) -> Run:
    session.expire_all()
    run = session.get(Run, run_id)
    assert run is not None
    return run


def _iris_dataset(client: TestClient) -> tuple[dict[str, str], int]:
    headers, project_id = admin_project(client, "D")
    iris = load_iris()
    return headers, upload_csv(client, project_id, headers, iris.data, iris.target)


def test_a_run_executing_on_dask_survives_an_app_restart(
    dask_settings: Callable[[str], Settings], session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    fitting = threading.Event()
    real_fit = runner._fit_and_store

    def held_fit(claim: runner.Claim, token: runner.CancelToken | None, *rest: Any) -> None:
        fitting.set()
        assert gate.wait(600)
        real_fit(claim, token, *rest)

    monkeypatch.setattr(runner, "_fit_and_store", held_fit)
    try:
        with _cluster() as cluster:
            settings = dask_settings(cluster.scheduler_address)
            with TestClient(create_app(settings)) as first:
                headers, dataset_id = _iris_dataset(first)
                _until(lambda: first.get("/api/v1/health").json()["jobs"]["connected"])
                run_id = start(first, headers, dataset_id, "cec", n_clusters=3).json()["id"]
                assert fitting.wait(600)
                assert _run(session, run_id).status == "running"
            # The app is gone; its task is not. A new app reconciles with the scheduler.
            with TestClient(create_app(settings)) as second:
                _until(lambda: second.get("/api/v1/health").json()["jobs"]["connected"])
                second.app.state.executor.reconcile()  # type: ignore[attr-defined]
                run = _run(session, run_id)
                assert (run.status, run.error) == ("running", None)
                gate.set()
                finished = wait(second, headers, run_id, timeout=600)
                assert (finished["status"], finished["error"]) == ("succeeded", None)
                results = session.scalar(
                    select(func.count()).select_from(RunResult).where(RunResult.run_id == run_id)
                )
                assert results == 1
    finally:
        gate.set()  # never leave the worker thread held (the cluster would not close)


def test_runs_the_scheduler_forgot_are_failed_and_queued_ones_resubmitted(
    dask_settings: Callable[[str], Settings], session: Session
) -> None:
    with _cluster() as cluster:
        settings = dask_settings(cluster.scheduler_address)
        with TestClient(create_app(settings)) as client:
            headers, dataset_id = _iris_dataset(client)
            _until(lambda: client.get("/api/v1/health").json()["jobs"]["connected"])
            ids = [start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]]
            ids += [start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]]
            ids += [start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]]
            for run_id in ids:
                wait(client, headers, run_id, timeout=600)
        # As a crash would leave them: one run on a Dask task the scheduler never heard of,
        # one claimed by an inline thread of the dead process, one queued and never sent.
        forgotten, inline, queued = ids
        rows = {
            forgotten: {"status": "running", "worker_key": f"{KEY_PREFIX}{forgotten}-deadbeef"},
            inline: {"status": "running", "worker_key": "0" * 32},
            queued: {"status": "queued", "worker_key": None},
        }
        for run_id, values in rows.items():
            session.execute(update(Run).where(Run.id == run_id).values(error=None, **values))
            session.execute(RunResult.__table__.delete().where(RunResult.run_id == run_id))
        session.commit()
        with TestClient(create_app(settings)) as client:
            _until(lambda: client.get("/api/v1/health").json()["jobs"]["connected"])
            client.app.state.executor.reconcile()  # type: ignore[attr-defined]
            assert wait(client, headers, queued, timeout=600)["status"] == "succeeded"
            lost = _run(session, forgotten)
            assert (lost.status, lost.error, lost.worker_key) == ("failed", LOST, None)
            dead = _run(session, inline)
            assert (dead.status, dead.error) == ("failed", INTERRUPTED)


def test_the_app_starts_without_a_scheduler_and_runs_wait_for_one(
    dask_settings: Callable[[str], Settings],
) -> None:
    port = free_port()
    settings = dask_settings(f"tcp://127.0.0.1:{port}")
    with TestClient(create_app(settings)) as client:
        headers, dataset_id = _iris_dataset(client)
        run_id = start(client, headers, dataset_id, "cec", n_clusters=3).json()["id"]
        health = client.get("/api/v1/health")
        assert health.status_code == 200
        jobs = health.json()["jobs"]
        assert (jobs["connected"], jobs["runs_waiting_for_scheduler"]) == (False, 1)
        assert client.get(f"/api/v1/runs/{run_id}", headers=headers).json()["status"] == "queued"
        _until(
            lambda: (
                f"no Dask scheduler answers at tcp://127.0.0.1:{port}"
                in (
                    client.get(f"/api/v1/runs/{run_id}", headers=headers).json()["waiting_for"]
                    or ""
                )
            )
        )
        with _cluster(port) as cluster:
            run = wait(client, headers, run_id, timeout=600)
            assert (run["status"], run["error"], run["waiting_for"]) == ("succeeded", None, None)
            assert client.get("/api/v1/health").json()["jobs"]["connected"] is True
            # Connecting put the executor's worker plugin on the cluster (test_worker_heap.py).
            assert HeapForArrays.name in cluster.scheduler.worker_plugins
