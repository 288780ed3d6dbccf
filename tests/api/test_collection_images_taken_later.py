"""A collection's images are taken from their uploaded files in the background, after the upload
has been answered: the files are kept (staged) until no image waits for them, a pass cut short
by a stopping server is taken up again, a file whose pixels turn out unreadable fails its images
saying why, and deleting the images releases their file."""

import io
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Dataset, StoredArray
from app.jobs.featurize.collection_images import take_collection_image
from app.store.staged_files import STAGED_FILE
from tests.api.test_image_featurization import wait_ready

pytestmark = pytest.mark.db


def stack(n_planes: int) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(3)
    planes = rng.integers(0, 4000, size=(n_planes, 24, 32), dtype=np.uint16)
    out = io.BytesIO()
    tifffile.imwrite(out, planes, photometric="minisblack", compression="zlib")
    return out.getvalue(), planes


def upload_held(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    data: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Upload a stack as a collection with its featurizations held back (not submitted)."""
    held: list[int] = []
    monkeypatch.setattr(client.app.state.executor, "submit_featurizations", held.extend)
    response = client.post(
        f"/api/v1/projects/{project_id}/collections",
        files=[("files", ("z.tif", data, "image/tiff"))],
        data={"name": "z"},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    monkeypatch.undo()
    return response.json()["items"], held


def staged(session: Session) -> list[StoredArray]:
    session.expire_all()
    return list(session.scalars(select(StoredArray).where(StoredArray.kind == STAGED_FILE)))


def staged_dirs(store_dir: Path) -> list[Path]:
    root = store_dir / "staged"
    return [p for p in root.iterdir() if p.is_dir()] if root.exists() else []


def test_the_file_is_kept_until_every_image_is_taken_then_released(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    store_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, planes = stack(5)
    made, held = upload_held(client, project_id, admin_headers, data, monkeypatch)
    assert len(made) == 5 and len(staged(session)) == 1 and len(staged_dirs(store_dir)) == 1
    for dataset_id in held:
        client.app.state.executor.submit_featurization(dataset_id)
    for z, dataset in enumerate(made):
        assert wait_ready(client, admin_headers, dataset["id"])["status"] == "ready"
        original = client.get(
            f"/api/v1/datasets/{dataset['id']}/image/original", headers=admin_headers
        )
        np.testing.assert_array_equal(tifffile.imread(io.BytesIO(original.content)), planes[z])
    assert staged(session) == []
    assert staged_dirs(store_dir) == []


def test_a_pass_cut_short_by_a_stopping_server_is_taken_up_at_the_next_start(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, _ = stack(4)
    made, _held = upload_held(client, project_id, admin_headers, data, monkeypatch)
    factory: sessionmaker[Session] = client.app.state.session_factory
    stopping = threading.Event()
    stopping.set()
    assert take_collection_image(factory, made[0]["id"], 1024, stopping) is False
    assert len(staged(session)) == 1  # nothing taken, the file kept
    assert take_collection_image(factory, made[2]["id"], 1024, threading.Event()) is True
    session.expire_all()
    for dataset in made:  # one pass took every image of the file
        row = session.get(Dataset, dataset["id"])
        assert row is not None and "source" not in (row.featurization or {})
        assert row.meta["image"]["bytes"] > 0
    assert staged(session) == []


def test_a_file_whose_pixels_cannot_be_read_fails_its_images_saying_why(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The headers vouch for where each strip is, not for what it holds: a strip of garbage
    shows only when the plane is decoded, in the background."""
    data, _ = stack(3)
    with tifffile.TiffFile(io.BytesIO(data)) as tif:
        offset = tif.pages[1].dataoffsets[0]
    broken = bytearray(data)
    broken[offset : offset + 16] = b"\xff" * 16
    made, held = upload_held(client, project_id, admin_headers, bytes(broken), monkeypatch)
    for dataset_id in held:
        client.app.state.executor.submit_featurization(dataset_id)
    done = [wait_ready(client, admin_headers, d["id"]) for d in made]
    assert done[0]["status"] == "ready"
    for dataset in done[1:]:
        assert dataset["status"] == "failed"
        assert "'z.tif'" in dataset["featurization"]["error"]
        assert "cannot be read" in dataset["featurization"]["error"]
    assert staged(session) == []


def test_deleting_the_images_before_they_are_taken_releases_their_file(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    store_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, _ = stack(2)
    made, _held = upload_held(client, project_id, admin_headers, data, monkeypatch)
    first = client.delete(f"/api/v1/datasets/{made[0]['id']}", headers=admin_headers)
    assert first.status_code == 204
    assert len(staged(session)) == 1  # the other image still waits for it
    second = client.delete(f"/api/v1/datasets/{made[1]['id']}", headers=admin_headers)
    assert second.status_code == 204
    assert staged(session) == []
    assert staged_dirs(store_dir) == []
