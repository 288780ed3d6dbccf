"""A collection imported by reference (a file:// root): every TIFF file and OME-Zarr image
under a prefix becomes an image dataset read in place; a sync acts on the difference only
(new images registered, changed ones featurized again, gone ones removed unless annotated,
then kept and reported); what cannot be imported registers nothing."""

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.services import collection_imports
from tests.api.test_image_imports import write_ome_zarr, write_pyramid_tiff
from tests.conftest import admin_project, row_counts

pytestmark = pytest.mark.db


def planes(seed: int, size: int = 96) -> np.ndarray:
    """(4, size, size) uint16: a bright disc on a dim background, noise per seed."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:size, :size]
    disc = (rows - size / 2) ** 2 + (cols - size / 2) ** 2 < (size / 4) ** 2
    out = 1_000 + 8_000 * disc[None] + rng.normal(0, 200, (4, size, size))
    return np.clip(out, 0, 65_535).astype(np.uint16)


@pytest.fixture
def client_and_root(
    client_with: Callable[..., TestClient], tmp_path: Path
) -> tuple[TestClient, Path]:
    root = tmp_path / "shared"
    root.mkdir()
    return client_with(import_sources={f"file://{root}/": {}}), root


def _post(client: TestClient, headers: dict[str, str], project: int, path: str, **body: Any) -> Any:
    return client.post(f"/api/v1/projects/{project}/collections/{path}", json=body, headers=headers)


def _ready(client: TestClient, headers: dict[str, str], ids: list[int]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 120
    while True:
        got = [client.get(f"/api/v1/datasets/{i}", headers=headers).json() for i in ids]
        if all(d["status"] != "featurizing" for d in got):
            return got
        assert time.monotonic() < deadline, "featurization did not finish"
        time.sleep(0.2)


def test_a_prefix_of_images_is_a_collection_read_in_place_and_synced_incrementally(
    client_and_root: tuple[TestClient, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, root = client_and_root
    headers, project = admin_project(client, "C")
    plate = root / "plate"
    (plate / "row A").mkdir(parents=True)
    write_pyramid_tiff(plate / "row A" / "A01.ome.tif", planes(1), levels=2)
    write_pyramid_tiff(plate / "row A" / "A02.ome.tif", planes(2), levels=1)
    write_ome_zarr(plate / "B01.ome.zarr", planes(3), levels=2)
    (plate / "notes.txt").write_text("not an image")
    made = _post(client, headers, project, "import", name="plate 1", url=f"file://{plate}/")
    assert made.status_code == 201, made.text
    items = made.json()["items"]
    assert [d["name"] for d in items] == ["B01.ome.zarr", "row A/A01.ome.tif", "row A/A02.ome.tif"]
    assert all(d["meta"]["collection"] == "plate 1" and d["meta"]["source"] for d in items)
    assert all(d["status"] == "ready" for d in _ready(client, headers, [d["id"] for d in items]))
    assert not any(p.name == "labels" for p in plate.rglob("*"))  # nothing written beside

    # Nothing changed: nothing is read but the listing.
    inspected: list[str] = []
    real = collection_imports.registered_image
    monkeypatch.setattr(
        collection_imports, "registered_image",
        lambda _p, path, *a: inspected.append(path) or real(_p, path, *a),
    )  # fmt: skip
    quiet = _post(client, headers, project, "sync", name="plate 1")
    assert quiet.status_code == 200, quiet.text
    assert quiet.json() | {"name": None} == {
        "name": None, "new": [], "changed": [], "deleted": [], "kept": []
    }  # fmt: skip
    assert inspected == []

    # One image appears, one changes, one annotated one and one bare one go.
    by_name = {d["name"]: d for d in items}
    annotated = by_name["row A/A01.ome.tif"]["id"]
    labelled = client.post(
        f"/api/v1/datasets/{annotated}/annotations",
        json={"kind": "scribble", "label": "disc", "strokes": [
            {"points": [[40, 48], [56, 48]], "radius": 3}
        ]},
        headers=headers,
    )  # fmt: skip
    assert labelled.status_code == 201, labelled.text
    write_pyramid_tiff(plate / "C01.ome.tif", planes(4), levels=1)
    changed = plate / "row A" / "A02.ome.tif"
    write_pyramid_tiff(changed, planes(5)[:, :80], levels=1)
    os.utime(changed, (2_000_000_000, 2_000_000_000))
    (plate / "row A" / "A01.ome.tif").unlink()
    import shutil

    shutil.rmtree(plate / "B01.ome.zarr")
    synced = _post(client, headers, project, "sync", name="plate 1")
    assert synced.status_code == 200, synced.text
    report = synced.json()
    assert [d["name"] for d in report["new"]] == ["C01.ome.tif"]
    assert [d["id"] for d in report["changed"]] == [by_name["row A/A02.ome.tif"]["id"]]
    assert report["changed"][0]["meta"]["image"]["height"] == 80
    assert [Path(u).name for u in report["deleted"]] == ["B01.ome.zarr"]
    assert report["kept"] == [
        {"dataset_id": annotated, "url": f"file://{plate}/row A/A01.ome.tif", "annotations": 1}
    ]
    assert sorted(inspected) == sorted([str(plate / "C01.ome.tif"), str(changed)])
    gone = client.get(f"/api/v1/datasets/{by_name['B01.ome.zarr']['id']}", headers=headers)
    assert gone.status_code == 404
    again = _ready(client, headers, [report["new"][0]["id"], report["changed"][0]["id"]])
    assert all(d["status"] == "ready" for d in again), again


def test_what_cannot_be_a_collection_by_reference_is_refused_and_registers_nothing(
    client_and_root: tuple[TestClient, Path], session: Session
) -> None:
    client, root = client_and_root
    headers, project = admin_project(client, "C")
    (root / "empty").mkdir()
    (root / "bad").mkdir()
    write_pyramid_tiff(root / "bad" / "good.ome.tif", planes(1), levels=1)
    (root / "bad" / "broken.tif").write_bytes(b"II*\x00 not really")
    (root / "ok").mkdir()
    write_pyramid_tiff(root / "ok" / "one.ome.tif", planes(1), levels=1)
    assert (
        _post(client, headers, project, "import", name="ok", url=f"file://{root}/ok/").status_code
        == 201
    )
    before = row_counts(session)
    cases = [
        ({"name": "e", "url": f"file://{root}/empty/"}, 422, "no TIFF file"),
        ({"name": "b", "url": f"file://{root}/bad/"}, 422, "broken.tif"),
        ({"name": "x", "url": "file:///etc/"}, 422, "no configured source"),
        ({"name": "ok", "url": f"file://{root}/ok/"}, 409, "already"),
    ]
    for body, code, words in cases:
        response = _post(client, headers, project, "import", **body)
        assert response.status_code == code and words in response.text, response.text
    missing = _post(client, headers, project, "sync", name="nothing here")
    assert missing.status_code == 404
    session.expire_all()
    assert row_counts(session) == before
