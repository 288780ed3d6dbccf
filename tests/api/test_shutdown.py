"""SIGTERM stops a server promptly even with a long run and an open progress stream, and the
run it interrupted is recorded as such (before: the server blocked for over 120 s)."""

import signal
import threading
import time
from pathlib import Path

import httpx
from sklearn.datasets import make_blobs
from sqlalchemy import create_engine, text

from benchmarks._server import live_server
from tests.conftest import upload_npy


def test_sigterm_stops_the_server_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    database = tmp_path / "shutdown.db"
    with live_server(f"sqlite:///{database}") as server:
        base, headers = server.base, server.headers
        project = httpx.post(f"{base}/projects", json={"name": "P"}, headers=headers).json()
        x, _ = make_blobs(n_samples=20_000, centers=40, n_features=8, random_state=0)
        origin = base.removesuffix("/api/v1")
        with httpx.Client(base_url=origin, timeout=60) as client:
            dataset_id = upload_npy(client, project["id"], headers, x)  # type: ignore[arg-type]
        params = {"n_clusters": 80, "n_init": 100, "max_iter": 1000, "min_cluster_fraction": 0}
        run = httpx.post(
            f"{base}/runs",
            json={"dataset_id": dataset_id, "algorithm": "cec", "params": params},
            headers=headers,
        ).json()
        while httpx.get(f"{base}/runs/{run['id']}", headers=headers).json()["status"] != "running":
            time.sleep(0.1)

        def follow() -> None:
            try:
                with httpx.stream(
                    "GET", f"{base}/runs/{run['id']}/events", headers=headers, timeout=60
                ) as stream:
                    for _ in stream.iter_lines():
                        pass
            except httpx.HTTPError:
                pass  # the server going away ends the stream

        threading.Thread(target=follow, daemon=True).start()
        time.sleep(1.0)
        stopped = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=60)
        assert time.monotonic() - stopped < 30, "the server took too long to stop"
    engine = create_engine(f"sqlite:///{database}")
    with engine.connect() as conn:
        status, error = conn.execute(
            text("SELECT status, error FROM runs WHERE id = :id"), {"id": run["id"]}
        ).one()
    engine.dispose()
    assert status == "failed"
    assert error.startswith("interrupted"), error
