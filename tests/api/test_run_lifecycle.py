"""Faults around a run's life: its data deleted under it, a worker that no longer owns it,
database errors on its last write, a runner that dies. No run outlives its data, writes into
another run, or stays `running` without a worker."""

import time

import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.db.models import Run
from app.jobs.run import run_inputs, runner
from tests.api.test_runs import LONG, start, upload_csv, wait

pytestmark = pytest.mark.db


def _big(client: TestClient, project_id: int, headers: dict[str, str], name: str) -> int:
    x, _ = make_blobs(n_samples=6000, centers=30, n_features=6, random_state=0)
    return upload_csv(client, project_id, headers, x, name=name)


def _workers_idle(client: TestClient, timeout: float) -> bool:
    executor = client.app.state.executor  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with executor.lock:
            if not executor.active:
                return True
        time.sleep(0.05)
    return False


def _small_run(client: TestClient, project_id: int, headers: dict[str, str]) -> dict:  # type: ignore[type-arg]
    """A quick CEC run on two blobs, waited for to its end."""
    x, _ = make_blobs(n_samples=40, centers=2, n_features=2, random_state=1)
    dataset = upload_csv(client, project_id, headers, x)
    response = start(client, headers, dataset, "cec", n_clusters=2)
    assert response.status_code == 202, response.text
    return wait(client, headers, response.json()["id"], timeout=60)


def _running(
    client: TestClient, project_id: int, headers: dict[str, str], name: str
) -> tuple[int, int]:
    """A long run that has started: (dataset id, run id)."""
    dataset = _big(client, project_id, headers, name)
    run_id = start(client, headers, dataset, "cec", **LONG).json()["id"]
    wait(client, headers, run_id, until={"running"})
    return dataset, run_id


def test_deleting_a_dataset_stops_its_run_and_its_id_is_never_reused(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    doomed, old = _running(client, project_id, admin_headers, "doomed")
    deleted = client.delete(f"/api/v1/datasets/{doomed}", headers=admin_headers)
    assert deleted.status_code == 204
    assert _workers_idle(client, timeout=15), "the deleted run's worker kept computing"
    assert client.get(f"/api/v1/runs/{old}", headers=admin_headers).status_code == 404

    run = _small_run(client, project_id, admin_headers)
    assert run["dataset_id"] > doomed, "a deleted dataset's id was handed out again"
    assert run["id"] > old, "a deleted run's id was handed out again"
    assert run["status"] == "succeeded" and run["error"] is None


def test_deleting_a_project_stops_its_runs(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    _running(client, project_id, admin_headers, "in-project")
    assert client.delete(f"/api/v1/projects/{project_id}", headers=admin_headers).status_code == 204
    assert _workers_idle(client, timeout=15)


def test_a_worker_writes_only_to_the_run_it_claimed(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    _, run_id = _running(client, project_id, admin_headers, "claimed")
    # Another claim takes the row over (as after a restart's recovery): the first worker must
    # notice at its next progress write, stop, and write nothing more.
    session.execute(
        update(Run).where(Run.id == run_id).values(worker_key="someone-else", error="theirs")
    )
    session.commit()
    assert _workers_idle(client, timeout=15)
    session.expire_all()
    row = session.get(Run, run_id)
    assert row is not None
    assert (row.status, row.error, row.worker_key) == ("running", "theirs", "someone-else")


def test_the_final_write_survives_transient_database_errors(
    client: TestClient, project_id: int, admin_headers: dict[str, str], monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The pool timing out on the last write (as under 100 stalled streams) once left the run
    `running` for good; now the final write is retried."""
    real_update = runner.Claim.update
    refusals = {"left": 2}

    def flaky_update(self, session, **values):  # type: ignore[no-untyped-def]
        if "finished_at" in values and refusals["left"]:
            refusals["left"] -= 1
            raise OperationalError("UPDATE runs", {}, Exception("QueuePool limit reached"))
        return real_update(self, session, **values)

    def unreadable(**_kwargs: object) -> None:
        raise ValueError("the chunks are unreadable")

    monkeypatch.setattr(runner.Claim, "update", flaky_update)
    monkeypatch.setattr(run_inputs, "load_model_features", unreadable)
    run = _small_run(client, project_id, admin_headers)
    assert refusals["left"] == 0
    assert (run["status"], run["error"]) == ("failed", "ValueError: the chunks are unreadable")


def test_a_run_is_never_left_running_when_its_runner_dies(
    client: TestClient, project_id: int, admin_headers: dict[str, str], monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    def broken(*_args: object) -> None:
        raise RuntimeError("the runner itself broke")

    monkeypatch.setattr(runner.Claim, "finish", broken)
    monkeypatch.setattr(runner, "_fit_and_store", broken)
    run = _small_run(client, project_id, admin_headers)
    assert run["status"] == "failed"
    assert run["error"] == "the worker ended without a result"
