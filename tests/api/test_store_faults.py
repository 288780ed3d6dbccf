"""The array store when things go wrong: unusable at start-up (the server still starts and says
so; uploads get 503 and store nothing), and a server killed in the middle of an upload (after
a restart nothing of it remains: no row, no directory)."""

import contextlib
import io
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.config import Settings
from app.main import create_app
from app.services import array_store_state
from app.store import writers
from app.store.array_store import ArrayStore
from benchmarks._server import free_port, start_server, wait_until_serving
from tests.conftest import (
    ADMIN_PASSWORD,
    admin_project,
    post_dataset,
    row_counts,
    server_env,
    token_headers,
)

pytestmark = pytest.mark.db

CSV = b"a,b\n1,2\n3,4\n"


def test_an_unusable_store_is_reported_and_uploads_get_503(
    settings: Settings, tmp_path: Path, session: Session
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    broken = settings.model_copy(update={"array_store": str(blocker / "arrays")})
    with TestClient(create_app(broken)) as client:
        health = client.get("/api/v1/health").json()
        assert health["status"] == "ok"
        assert health["array_store"]["status"] == "unavailable"
        assert health["array_store"]["detail"]
        headers, project_id = admin_project(client)
        before = row_counts(session)
        response = post_dataset(client, project_id, headers, "d.csv", CSV, "text/csv")
        assert response.status_code == 503
        assert response.json()["code"] == "store_unavailable"
        assert row_counts(session) == before


def test_health_follows_a_store_that_breaks_after_start_up_and_is_mended(
    client: TestClient,
    settings: Settings,
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store's state on /health is the last one seen: a write that failed says it at
    once, and a probe (when the last look is old) finds it broken without a write, then
    usable again once it is mended."""
    headers, project_id = admin_project(client)
    assert client.get("/api/v1/health").json()["array_store"]["status"] == "ok"
    store = Path(settings.array_store)
    moved = store.with_name("arrays-away")
    store.rename(moved)
    store.write_text("not a directory")  # nothing can be written under it, not even by root
    before = row_counts(session)
    refused = post_dataset(client, project_id, headers, "d.csv", CSV, "text/csv")
    assert refused.status_code == 503 and row_counts(session) == before
    seen = client.get("/api/v1/health").json()["array_store"]
    assert seen["status"] == "unavailable" and "arrays" in seen["detail"]
    assert seen["checked_s_ago"] < 5  # the failed write's look, no probe yet

    store.unlink()
    moved.rename(store)  # mended
    assert client.get("/api/v1/health").json()["array_store"]["status"] == "unavailable"
    monkeypatch.setattr(array_store_state, "PROBE_EVERY_S", 0.0)
    assert client.get("/api/v1/health").json()["array_store"]["status"] == "ok"
    assert post_dataset(client, project_id, headers, "d.csv", CSV, "text/csv").status_code == 201

    store.rename(moved)
    store.write_text("not a directory")  # broken again, and no write tells
    probed = client.get("/api/v1/health").json()["array_store"]
    assert probed["status"] == "unavailable" and probed["checked_s_ago"] < 5
    store.unlink()
    moved.rename(store)


def test_start_up_removes_what_no_dataset_refers_to(
    client: TestClient,
    settings: Settings,
    project_id: int,
    admin_headers: dict[str, str],
) -> None:
    kept = post_dataset(client, project_id, admin_headers, "d.csv", CSV, "text/csv").json()
    store = ArrayStore(settings.array_store)
    store.write("datasets/999-deadbeef/features.x", np.zeros((3, 2)), chunk_rows=2)
    assert "999-deadbeef" in store.children("datasets")
    with TestClient(create_app(settings)):  # a restart
        pass
    left = store.children("datasets")
    assert "999-deadbeef" not in left
    assert any(name.startswith(f"{kept['id']}-") for name in left)


def _serve(work: Path, port: int) -> subprocess.Popen[bytes]:
    return start_server(port, server_env(work), work / "server.log")


def _dataset_dirs(work: Path) -> list[str]:
    root = work / "arrays" / "datasets"
    return sorted(d.name for d in root.iterdir() if d.is_dir()) if root.exists() else []


def test_a_server_killed_mid_upload_leaves_nothing_after_a_restart(tmp_path: Path) -> None:
    rows = np.random.default_rng(0).normal(size=(400_000, 8))
    text = io.BytesIO()
    np.savetxt(text, rows, delimiter=",", fmt="%.6f", header=",".join(f"f{j}" for j in range(8)),
               comments="")  # fmt: skip
    data = text.getvalue()
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    server = _serve(tmp_path, port)
    try:
        wait_until_serving(base, server, log=tmp_path / "server.log")
        headers = token_headers(httpx.Client(base_url=base.removesuffix("/api/v1")), "admin",
                                ADMIN_PASSWORD)  # fmt: skip
        project = httpx.post(f"{base}/projects", json={"name": "P"}, headers=headers).json()

        def upload() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the server dies under it
                httpx.post(
                    f"{base}/projects/{project['id']}/datasets",
                    files={"file": ("big.csv", data, "text/csv")},
                    headers=headers,
                    timeout=60,
                )

        uploading = threading.Thread(target=upload)
        uploading.start()
        deadline = time.monotonic() + 60
        while not _dataset_dirs(tmp_path):  # the upload has started writing to the store
            assert time.monotonic() < deadline, "the upload never reached the store"
            time.sleep(0.005)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        uploading.join(timeout=60)
        assert _dataset_dirs(tmp_path), "killed too late: the upload's directory is already gone"
    finally:
        if server.poll() is None:
            server.kill()
    server = _serve(tmp_path, port)
    try:
        wait_until_serving(base, server, log=tmp_path / "server.log")
        headers = token_headers(httpx.Client(base_url=base.removesuffix("/api/v1")), "admin",
                                ADMIN_PASSWORD)  # fmt: skip
        listing = httpx.get(f"{base}/projects/{project['id']}/datasets", headers=headers).json()
        assert listing["total"] == 0
        assert _dataset_dirs(tmp_path) == []
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_running_out_of_memory_is_named_as_such_and_stores_nothing(
    client: TestClient, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory exhausted while an upload writes its arrays: 503 `out_of_memory`, not "array
    store unavailable" (the store is fine, and /health keeps saying so)."""
    headers, project_id = admin_project(client)

    def no_memory(*_: object) -> None:
        raise MemoryError("Unable to allocate 9.10 GiB for an array")

    monkeypatch.setattr(writers.RowWriter, "_put", no_memory)
    before = row_counts(session)
    response = post_dataset(client, project_id, headers, "d.csv", CSV, "text/csv")
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "out_of_memory"
    assert "ran out of memory" in response.json()["detail"]
    assert response.headers["Retry-After"]
    assert row_counts(session) == before
    assert client.get("/api/v1/health").json()["array_store"]["status"] == "ok"
