"""Runs on a region of a slide over REST: fitted on the scribbled items and a sample, applied
to the items the region touches; its tiles and PNG cover the region (404 outside it), and
where the fit saw every item it gives the whole-slide run's labels there."""

import io
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.engine.image.channels import Multichannel
from app.engine.image.deep_zoom import DeepZoom
from app.engine.image.featurize import Recipe, featurize
from app.jobs.run import region_runs
from tests.api.test_runs import wait
from tests.api.test_slides import (
    BLOCK,
    HEIGHT,
    NAMES,
    WIDTH,
    _wait_ready,
    slide_client,
    slide_file,
    slide_planes,
)
from tests.conftest import admin_project

pytestmark = pytest.mark.db
__all__ = ["slide_client"]  # the fixture, used by name

REGION = {"x": 230, "y": 260, "width": 260, "height": 220}  # the disc's edge and background
STROKES = {
    "cell": [{"points": [[250, 300], [360, 420]], "radius": 6.5}],
    "background": [{"points": [[20, 20], [60, 650]], "radius": 4}],
}


def _painted_slide(client: TestClient) -> tuple[dict[str, str], int, np.ndarray]:
    """A slide, featurized and scribbled; its map of items as the whole picture gives it."""
    headers, project = admin_project(client, "S")
    planes, _ = slide_planes(1)
    data = slide_file(planes, tile=(128, 128), compression="zlib")
    response = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("slide.ome.tif", data, "image/tiff")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    dataset_id = int(response.json()["id"])
    assert _wait_ready(client, headers, dataset_id)["status"] == "ready"
    for label, drawn in STROKES.items():
        body = {"kind": "scribble", "label": label, "strokes": drawn}
        created = client.post(
            f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=headers
        )
        assert created.status_code == 201, created.text
    whole = featurize(Multichannel.of(planes, NAMES), Recipe(), block_size=BLOCK)
    return headers, dataset_id, whole.item_of_pixel


def _run(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    started = client.post("/api/v1/runs", json={"algorithm": "ppc", **body}, headers=headers)
    assert started.status_code == 202, started.text
    run = wait(client, headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    return run


def _labels(client: TestClient, headers: dict[str, str], run_id: int) -> np.ndarray:
    response = client.get(f"/api/v1/runs/{run_id}/result.npy", headers=headers)
    assert response.status_code == 200, response.text
    return np.load(io.BytesIO(response.content))


def _window(items: np.ndarray) -> np.ndarray:
    x, y, w, h = (REGION[k] for k in ("x", "y", "width", "height"))
    return items[y : y + h, x : x + w]


def test_a_region_run_labels_the_region_and_agrees_with_the_whole_slide(
    slide_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = slide_client
    headers, dataset_id, items = _painted_slide(client)
    n_items = int(items.max()) + 1
    whole = _labels(client, headers, _run(client, headers, {"dataset_id": dataset_id})["id"])

    # The fit sees every item (fewer than FIT_ITEMS): the whole slide's labels, in the region.
    run = _run(client, headers, {"dataset_id": dataset_id, "region": REGION})
    assert run["region"] == REGION
    labels = _labels(client, headers, run["id"])
    touched = np.unique(_window(items))
    assert (labels[touched] >= 0).all()
    outside = np.setdiff1d(np.arange(n_items), touched)
    # Outside, only items whose bounding box grazes the region may be labelled.
    assert (labels[outside] >= 0).mean() < 0.05
    assert np.array_equal(labels[touched], whole[touched])
    metrics = client.get(f"/api/v1/runs/{run['id']}/result", headers=headers).json()["metrics"]
    assert metrics["region"]["items"] >= touched.size and metrics["region"]["of"] == n_items
    assert metrics["region"]["fitted_on"] == n_items
    assert set(metrics["cluster_labels"]) >= {"cell", "background"}

    # The full-resolution PNG is the region's mask.
    png = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=headers)
    assert png.status_code == 200, png.text
    mask = np.asarray(Image.open(io.BytesIO(png.content)))
    assert mask.shape == (REGION["height"], REGION["width"])
    assert np.array_equal(mask, labels[_window(items)])

    # Tiles: the region's pixels coloured, the rest clear; a tile outside it is 404.
    zoom = DeepZoom(WIDTH, HEIGHT)
    top = zoom.max_level
    tile = client.get(f"/api/v1/runs/{run['id']}/result_files/{top}/1_1.png", headers=headers)
    assert tile.status_code == 200, tile.text
    x0, y0, x1, y1 = zoom.tile_box(top, 1, 1)
    rgba = np.asarray(Image.open(io.BytesIO(tile.content)))
    assert rgba.shape == (y1 - y0, x1 - x0, 4)
    assert np.array_equal(rgba[..., 3] > 0, labels[items[y0:y1, x0:x1]] >= 0)
    far = client.get(f"/api/v1/runs/{run['id']}/result_files/{top}/0_0.png", headers=headers)
    assert far.status_code == 404 and "lies outside" in far.json()["detail"]
    assert "x 230 .. 489" in far.json()["detail"]

    # Fitted on a sample (the scribbled items, the region's, and others up to 1,500): the
    # model still finds the disc as the whole-slide run does on nearly all of the region.
    monkeypatch.setattr(region_runs, "FIT_ITEMS", 1_500)
    sampled = _run(client, headers, {"dataset_id": dataset_id, "region": REGION})
    got = _labels(client, headers, sampled["id"])
    metrics = client.get(f"/api/v1/runs/{sampled['id']}/result", headers=headers).json()
    assert metrics["metrics"]["region"]["fitted_on"] < n_items
    window = _window(items)
    assert (got[window] == whole[window]).mean() > 0.95


def test_what_a_region_run_cannot_take_is_refused_with_the_reason(
    slide_client: TestClient,
) -> None:
    client = slide_client
    headers, dataset_id, _ = _painted_slide(client)
    runs_before = client.get(f"/api/v1/datasets/{dataset_id}/runs", headers=headers).json()

    def refused(region: dict[str, Any], dataset: int = dataset_id) -> str:
        body = {"dataset_id": dataset, "algorithm": "ppc", "region": region}
        response = client.post("/api/v1/runs", json=body, headers=headers)
        assert response.status_code == 422, response.text
        return str(response.json()["detail"])

    assert "not inside the slide (620 x 700 pixels" in refused({**REGION, "x": 500})
    assert "not inside the slide" in refused({**REGION, "y": 600})
    assert "width" in refused({**REGION, "width": 0})
    assert "x" in refused({**REGION, "x": -1})

    # A table has no region.
    _, project = admin_project(client, "T")
    table = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("t.csv", b"a,b\n1,2\n3,4\n5,7\n", "text/csv")},
        headers=headers,
    )
    assert table.status_code == 201, table.text
    assert "not a slide" in refused(REGION, int(table.json()["id"]))
    # JSON Schema counts 230.0 as an integer: the schema's checks pass, the reason is the same
    # (found by schemathesis: a schema-valid region was refused as "not a valid integer").
    as_floats = {key: float(value) for key, value in REGION.items()}
    assert "not a slide" in refused(as_floats, int(table.json()["id"]))
    runs_after = client.get(f"/api/v1/datasets/{dataset_id}/runs", headers=headers).json()
    assert runs_after == runs_before  # nothing queued

    # A slide deleted meanwhile (the viewer still open on it): its viewport's run and tiles
    # are 404 with the reason.
    deleted = client.delete(f"/api/v1/datasets/{dataset_id}", headers=headers)
    assert deleted.status_code in (200, 204), deleted.text
    body = {"dataset_id": dataset_id, "algorithm": "ppc", "region": REGION}
    gone = client.post("/api/v1/runs", json=body, headers=headers)
    assert gone.status_code == 404 and f"no dataset with id {dataset_id}" in gone.json()["detail"]
    tile = client.get(f"/api/v1/datasets/{dataset_id}/image_files/0/0_0.png", headers=headers)
    assert tile.status_code == 404, tile.text
