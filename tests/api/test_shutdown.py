"""SIGTERM stops a server promptly even with a long run and an open progress stream, and the
run it interrupted is recorded as such (before: the server blocked for over 120 s)."""

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from sklearn.datasets import make_blobs
from sqlalchemy import create_engine, text

PASSWORD = "shutdown-test-password"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_sigterm_stops_the_server_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    database = tmp_path / "shutdown.db"
    port = _port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "ADMIN_PASSWORD": PASSWORD,
        "LOAD_DEMO_DATA": "false",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "no server"
            time.sleep(0.2)
        token = httpx.post(
            f"{base}/auth/token", data={"username": "admin", "password": PASSWORD}
        ).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        project = httpx.post(f"{base}/projects", json={"name": "P"}, headers=headers).json()
        x, _ = make_blobs(n_samples=20_000, centers=40, n_features=8, random_state=0)
        buffer = io.BytesIO()
        np.save(buffer, x)
        dataset = httpx.post(
            f"{base}/projects/{project['id']}/datasets",
            files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
            headers=headers,
            timeout=60,
        ).json()
        params = {"n_clusters": 80, "n_init": 100, "max_iter": 1000, "min_cluster_fraction": 0}
        run = httpx.post(
            f"{base}/runs",
            json={"dataset_id": dataset["id"], "algorithm": "cec", "params": params},
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
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        assert time.monotonic() - stopped < 30, "the server took too long to stop"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    engine = create_engine(f"sqlite:///{database}")
    with engine.connect() as conn:
        status, error = conn.execute(
            text("SELECT status, error FROM runs WHERE id = :id"), {"id": run["id"]}
        ).one()
    engine.dispose()
    assert status == "failed"
    assert error.startswith("interrupted"), error
