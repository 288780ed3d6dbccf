"""SIGTERM stops a server promptly even with a long run and an open progress stream, and the
run it interrupted is recorded as such (before: the server blocked for over 120 s)."""

import io
import re
import signal
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from PIL import Image
from sklearn.datasets import make_blobs
from sqlalchemy import create_engine, text

from benchmarks._server import live_server, restarted_server
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


def test_sigterm_during_featurizations_leaves_them_to_resume_at_the_next_start(
    tmp_path: Path,
) -> None:
    """Featurizations are told to stop with the server (they used to hold its exit for the
    executor's whole grace, and a slide's queued blocks for longer): none is marked failed,
    and the next start takes them up again to the end."""
    rng = np.random.default_rng(0)
    with live_server(**QUIET) as server:  # restarted_server: the same database and store
        api = httpx.Client(base_url=server.base, headers=server.headers, timeout=60)
        project = api.post("/projects", json={"name": "P"}).json()["id"]
        ids = []
        for k in range(3):
            coarse = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
            pixels = np.kron(coarse, np.ones((24, 24, 1), dtype=np.uint8))  # 1536 x 1536
            buffer = io.BytesIO()
            Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
            made = api.post(
                f"/projects/{project}/datasets",
                files={"file": (f"p{k}.png", buffer.getvalue(), "image/png")},
            )
            assert made.status_code == 201, made.text
            ids.append(made.json()["id"])
        while all(_featurization(api, i).get("progress", 0) == 0 for i in ids):
            time.sleep(0.05)
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=60)
        log = server.log.read_text()
        # Whether a featurization reached its next progress report before the process ended
        # depends on the machine's speed (the server waits FEATURIZATION_GRACE_S for it, no
        # longer); either way none may be called failed, and the next start finishes all three.
        assert not re.search(r"featurization of dataset \d+ failed", log), log[-3000:]
        with restarted_server(server, **QUIET) as again:
            api = httpx.Client(base_url=again.base, headers=again.headers, timeout=60)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                statuses = [api.get(f"/datasets/{i}").json()["status"] for i in ids]
                if set(statuses) != {"featurizing"} and "featurizing" not in statuses:
                    break
                time.sleep(0.5)
            assert statuses == ["ready"] * 3, statuses


QUIET = {"WARM_KERNELS_ON_START": "false"}


def _featurization(api: httpx.Client, dataset_id: int) -> dict:  # type: ignore[type-arg]
    return api.get(f"/datasets/{dataset_id}").json().get("featurization") or {}
