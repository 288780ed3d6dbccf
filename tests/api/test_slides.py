"""Whole slides over REST: a TIFF above IMAGE_WHOLE_PIXELS is read in bands into the array
store, featurized block by block from there, painted, segmented and exported, with results
equal to the same picture featurized whole in memory in the same blocks."""

import io
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.engine.image import slide_featurize
from app.engine.image.channels import Multichannel
from app.engine.image.deep_zoom import DeepZoom, halve_mask
from app.engine.image.featurize import Recipe, featurize
from app.engine.image.strokes import items_under, rasterize_strokes
from app.services.deep_zoom import PALETTE
from benchmarks.ome import ome_tiff
from tests.api.test_runs import wait
from tests.api.test_tiff_uploads import cells
from tests.conftest import admin_project

pytestmark = pytest.mark.db

HEIGHT, WIDTH = 700, 620
BLOCK = 256
NAMES = ["DAPI", "GFP", "RFP", "Cy5"]


def slide_planes(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(C, H, W) uint16 with a bright disc in GFP and a dim one in DAPI; truth per pixel."""
    return cells(seed, shape=(HEIGHT, WIDTH), disc=(350, 300, 180))


def slide_file(planes: np.ndarray, compression: str | None = None, **options: Any) -> bytes:
    return ome_tiff(planes, NAMES, compression=compression, **options)


@pytest.fixture
def slide_client(
    monkeypatch: pytest.MonkeyPatch, client_with: Callable[..., TestClient]
) -> TestClient:
    # monkeypatch first: it is undone after the app has shut down
    monkeypatch.setattr(slide_featurize, "SLIDE_BLOCK", BLOCK)
    return client_with(image_whole_pixels=100_000)


def _wait_ready(client: TestClient, headers: dict[str, str], dataset_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=headers).json()
        if dataset["status"] != "featurizing":
            return dataset
        time.sleep(0.2)
    raise AssertionError("featurization did not finish")


@pytest.mark.parametrize("options", [{"tile": (128, 128), "compression": "zlib"}, {}])
def test_a_slide_is_stored_in_bands_and_featurized_as_the_whole_picture(
    slide_client: TestClient, options: dict[str, Any]
) -> None:
    client = slide_client
    headers, project = admin_project(client, "S")
    planes, _ = slide_planes()
    data = slide_file(planes, **options)
    response = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("slide.ome.tif", data, "image/tiff")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["meta"]["image"]["tiled"] is True
    assert created["meta"]["image"]["channels"] == NAMES
    dataset = _wait_ready(client, headers, created["id"])
    assert dataset["status"] == "ready", dataset
    whole = featurize(Multichannel.of(planes, NAMES), Recipe(), block_size=BLOCK)
    assert dataset["n_items"] == whole.n_items
    features = client.get(f"/api/v1/datasets/{created['id']}/features", headers=headers)
    assert features.status_code == 200, features.text
    got = np.load(io.BytesIO(features.content))
    scale = np.abs(whole.features).max()
    assert np.abs(got - whole.features).max() <= 1e-5 * scale
    original = client.get(f"/api/v1/datasets/{created['id']}/image/original", headers=headers)
    assert original.status_code == 200 and original.content == data
    tile = client.get(f"/api/v1/datasets/{created['id']}/image_files/0/0_0.png", headers=headers)
    assert tile.status_code == 200
    assert np.asarray(Image.open(io.BytesIO(tile.content))).shape[:2] == (1, 1)


def test_a_slide_is_painted_segmented_and_exported_without_its_map_held(
    slide_client: TestClient,
) -> None:
    """Strokes resolve on regions of the map, PPC links touching items from their gathered
    borders, and the mask (tiles at two zoom levels, the full PNG) is the run's labels looked
    up in the map: each equal to what the whole map gives."""
    client = slide_client
    headers, project = admin_project(client, "S")
    planes, truth = slide_planes(1)
    data = slide_file(planes, tile=(128, 128), compression="zlib")
    response = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("slide.ome.tif", data, "image/tiff")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    dataset_id = response.json()["id"]
    assert _wait_ready(client, headers, dataset_id)["status"] == "ready"
    whole = featurize(Multichannel.of(planes, NAMES), Recipe(), block_size=BLOCK)
    items = whole.item_of_pixel

    strokes = {
        "cell": [{"points": [[250, 300], [360, 420]], "radius": 6.5}],
        "background": [{"points": [[20, 20], [60, 650]], "radius": 4}],
    }
    for label, drawn in strokes.items():
        body = {"kind": "scribble", "label": label, "strokes": drawn}
        created = client.post(
            f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=headers
        )
        assert created.status_code == 201, created.text
    expected = set()
    for drawn in strokes.values():
        mask = rasterize_strokes(drawn, (HEIGHT, WIDTH))
        expected |= set(items_under(mask, items, whole.n_items).tolist())
    side = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=headers)
    assert side.json()["n_labeled"] == len(expected)

    started = client.post(
        "/api/v1/runs", json={"dataset_id": dataset_id, "algorithm": "ppc"}, headers=headers
    )
    assert started.status_code == 202, started.text
    run = wait(client, headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    labels_response = client.get(f"/api/v1/runs/{run['id']}/result.npy", headers=headers)
    labels = np.load(io.BytesIO(labels_response.content))
    want = labels[items]
    png = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=headers)
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    mask = np.asarray(Image.open(io.BytesIO(png.content)))
    assert np.array_equal(mask, want)
    disc = truth == 1
    inside = np.bincount(mask[disc]).argmax()
    assert (mask[disc] == inside).mean() > 0.9 and (mask[~disc] != inside).mean() > 0.9

    zoom = DeepZoom(WIDTH, HEIGHT)
    colours = np.array([[int(c[i : i + 2], 16) for i in (0, 2, 4)] for c in PALETTE])
    level_ids = want
    for level in range(zoom.max_level, zoom.max_level - 3, -1):
        x0, y0, x1, y1 = zoom.tile_box(level, 0, 0)
        tile = client.get(f"/api/v1/runs/{run['id']}/result_files/{level}/0_0.png", headers=headers)
        assert tile.status_code == 200, tile.text
        shown = np.asarray(Image.open(io.BytesIO(tile.content)))
        assert np.array_equal(shown, colours[level_ids[y0:y1, x0:x1] % len(colours)])
        level_ids = halve_mask(level_ids)

    page = client.get(
        f"/api/v1/datasets/{dataset_id}/suggestions",
        params={"kind": "items", "n": 3},
        headers=headers,
    )
    assert page.status_code == 200, page.text
    for question in page.json()["items"]:
        for item, region in zip(question["items"], question["regions"], strict=True):
            x, y = region["anchor"]
            assert items[y, x] == item
            bx0, by0, bx1, by1 = region["bbox"]
            where = np.argwhere(items == item)
            assert (by0, bx0, by1, bx1) == (*where.min(axis=0), *where.max(axis=0))


def test_what_a_slide_cannot_take_is_refused_with_the_reason(slide_client: TestClient) -> None:
    client = slide_client
    headers, project = admin_project(client, "S")
    planes, truth = slide_planes()
    url = f"/api/v1/projects/{project}/datasets"
    truth_png = io.BytesIO()
    Image.fromarray(truth.astype(np.uint8)).save(truth_png, format="PNG")
    refused = client.post(
        url,
        files={
            "file": ("s.tif", slide_file(planes), "image/tiff"),
            "ground_truth": ("t.png", truth_png.getvalue(), "image/png"),
        },
        headers=headers,
    )
    assert refused.status_code == 422 and "not for slides" in refused.json()["detail"]
    bad = planes.astype(np.float32)
    bad[1, 650, 3] = np.nan
    refused = client.post(
        url, files={"file": ("nan.tif", slide_file(bad), "image/tiff")}, headers=headers
    )
    assert refused.status_code == 422 and "NaN" in refused.json()["detail"]
    assert "rows" in refused.json()["detail"]
    big = io.BytesIO()
    Image.fromarray(np.zeros((400, 400, 3), np.uint8)).save(big, format="PNG")
    refused = client.post(
        url, files={"file": ("big.png", big.getvalue(), "image/png")}, headers=headers
    )
    assert refused.status_code == 422 and "IMAGE_WHOLE_PIXELS" in refused.json()["detail"]
    assert client.get(f"/api/v1/projects/{project}/datasets", headers=headers).json()["total"] == 0
