"""TIFF and OME-TIFF images over REST: a 16-bit multichannel upload is stored as uploaded,
shown as a composite, featurized channel by channel, segmented from scribbles and applied to
another TIFF; a model is not applied to an image with other channels."""

import io
from typing import Any

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from PIL import Image

from app.engine.image.channels import Multichannel
from benchmarks.ome import ome_tiff
from tests.api.test_image_featurization import png, wait_ready
from tests.api.test_image_sessions import scribble
from tests.api.test_runs import run_succeeded, wait

pytestmark = pytest.mark.db

HEIGHT, WIDTH = 64, 96
NAMES = ["DAPI", "GFP", "RFP", "Cy5"]


def cells(
    seed: int = 0,
    n_channels: int = 4,
    shape: tuple[int, int] = (HEIGHT, WIDTH),
    disc: tuple[int, int, int] = (32, 36, 20),
) -> tuple[np.ndarray, np.ndarray]:
    """(C, H, W) uint16: a disc (centre row, centre column, radius) marked dimly in DAPI (a few
    hundred of 65,535 levels) and brightly in GFP; RFP and Cy5 are noise at other levels. Its
    truth per pixel (1 = disc)."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[: shape[0], : shape[1]]
    row, col, radius = disc
    truth = ((rows - row) ** 2 + (cols - col) ** 2 < radius**2).astype(int)
    planes = np.stack(
        [
            300 + 250 * truth + rng.normal(0, 30, truth.shape),
            4_000 + 30_000 * truth + rng.normal(0, 4_000, truth.shape),
            1_000 + rng.normal(0, 120, truth.shape),
            20_000 + rng.normal(0, 2_500, truth.shape),
        ][:n_channels]
    )
    return np.clip(planes, 0, 65_535).astype(np.uint16), truth


def upload_tiff(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    data: bytes,
    truth: np.ndarray,
    name: str = "cells.ome.tif",
) -> dict[str, Any]:
    files = {
        "file": (name, data, "image/tiff"),
        "ground_truth": ("truth.png", png(truth.astype(np.uint8)), "image/png"),
    }
    response = client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def scribble_cell_and_background(
    client: TestClient, headers: dict[str, str], dataset_id: int
) -> None:
    """A stroke across the disc of `cells()` and one across its background."""
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    for body in (
        scribble("cell", [[28, 32], [44, 32]]),
        scribble("background", [[80, 8], [88, 56]]),
    ):
        assert client.post(url, json=body, headers=headers).status_code == 201


def test_a_16_bit_ome_tiff_is_shown_featurized_and_segmented(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    planes, truth = cells()
    data = ome_tiff(planes, NAMES)
    created = upload_tiff(client, project_id, admin_headers, data, truth)
    flat = planes.reshape(4, -1)
    assert created["meta"]["image"] == {
        "format": "TIFF",
        "width": WIDTH,
        "height": HEIGHT,
        "mode": "4 x uint16",
        "dtype": "uint16",
        "channels": NAMES,
        "bytes": len(data),
        "ranges": Multichannel.of(planes).ranges().tolist(),
        "extremes": np.stack([flat.min(axis=1), flat.max(axis=1)], axis=1).tolist(),
    }
    dataset_id = created["id"]
    shown = client.get(f"/api/v1/datasets/{dataset_id}/image", headers=admin_headers)
    assert shown.status_code == 200 and shown.headers["content-type"] == "image/png"
    composite = np.asarray(Image.open(io.BytesIO(shown.content)))
    np.testing.assert_array_equal(composite, Multichannel.of(planes).composite())
    original = client.get(f"/api/v1/datasets/{dataset_id}/image/original", headers=admin_headers)
    assert original.headers["content-type"] == "image/tiff" and original.content == data

    ready = wait_ready(client, admin_headers, dataset_id)
    assert ready["status"] == "ready", ready
    assert ready["n_items"] == HEIGHT * WIDTH and ready["n_features"] == 8
    scribble_cell_and_background(client, admin_headers, dataset_id)
    run = run_succeeded(client, admin_headers, dataset_id, "ppc")
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()
    assert result["metrics"]["mean_iou"] > 0.9, result["metrics"]

    # The fitted model segments another TIFF with the same channels ...
    other_planes, other_truth = cells(seed=3)
    other = upload_tiff(
        client, project_id, admin_headers, ome_tiff(other_planes, NAMES), other_truth, "b.tif"
    )
    assert wait_ready(client, admin_headers, other["id"])["status"] == "ready"
    applied = client.post(
        f"/api/v1/runs/{run['id']}/apply", json={"dataset_id": other["id"]}, headers=admin_headers
    )
    assert applied.status_code == 202, applied.text
    applied_run = wait(client, admin_headers, applied.json()["id"])
    assert applied_run["status"] == "succeeded", applied_run
    applied_result = client.get(
        f"/api/v1/runs/{applied_run['id']}/result", headers=admin_headers
    ).json()
    assert applied_result["metrics"]["mean_iou"] > 0.9

    # ... and says why it cannot segment one with fewer channels.
    three_planes, three_truth = cells(seed=4, n_channels=3)
    three = upload_tiff(
        client, project_id, admin_headers, ome_tiff(three_planes, NAMES[:3]), three_truth, "c.tif"
    )
    assert wait_ready(client, admin_headers, three["id"])["status"] == "ready"
    refused = client.post(
        f"/api/v1/runs/{run['id']}/apply", json={"dataset_id": three["id"]}, headers=admin_headers
    )
    assert refused.status_code == 422, refused.text
    assert "fitted on channels" not in refused.json()["detail"]
    assert "4 measured channel(s) (DAPI, GFP, RFP, Cy5)" in refused.json()["detail"]
    assert "3 measured channel(s)" in refused.json()["detail"]
    reordered = upload_tiff(
        client, project_id, admin_headers, ome_tiff(other_planes, NAMES[::-1]), other_truth
    )
    refused = client.post(
        f"/api/v1/runs/{run['id']}/apply",
        json={"dataset_id": reordered["id"]},
        headers=admin_headers,
    )
    assert refused.status_code == 422 and "in the same order" in refused.json()["detail"]
    photo = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("p.png", png(np.zeros((HEIGHT, WIDTH, 3), np.uint8)), "image/png")},
        headers=admin_headers,
    ).json()
    refused = client.post(
        f"/api/v1/runs/{run['id']}/apply", json={"dataset_id": photo["id"]}, headers=admin_headers
    )
    assert refused.status_code == 422 and "a colour photo" in refused.json()["detail"]


def test_an_8_bit_rgb_tiff_is_a_photo(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    rgb = np.random.default_rng(1).integers(0, 255, size=(20, 30, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, rgb, photometric="rgb", compression="lzw")
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("photo.tiff", buffer.getvalue(), "image/tiff")},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    meta = response.json()["meta"]["image"]
    assert (meta["mode"], meta["dtype"], meta["channels"]) == ("RGB", "uint8", [])
    shown = client.get(f"/api/v1/datasets/{response.json()['id']}/image", headers=admin_headers)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(shown.content))), rgb)


def _float_tiff_mean_iou(
    client: TestClient, project_id: int, headers: dict[str, str], dtype: str, reach: float
) -> float:
    """`cells()`'s first two channels as float values in [-reach, reach], uploaded, featurized,
    scribbled and segmented by PPC: the run's mean IoU against the disc."""
    planes, truth = cells(n_channels=2)
    buffer = io.BytesIO()
    values = (planes / 65_535.0 - 0.5) * 2 * reach
    tifffile.imwrite(buffer, values.astype(dtype), metadata={"axes": "CYX"})
    dataset = upload_tiff(client, project_id, headers, buffer.getvalue(), truth)
    ready = wait_ready(client, headers, dataset["id"])
    assert ready["status"] == "ready", ready.get("featurization")
    scribble_cell_and_background(client, headers, dataset["id"])
    run = run_succeeded(client, headers, dataset["id"], "ppc")
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=headers).json()
    return float(result["metrics"]["mean_iou"])


@pytest.mark.parametrize(("dtype", "reach"), [("float64", 1e308), ("float32", 3e38)])
def test_a_float_tiff_at_the_end_of_the_float_range_is_featurized(
    client: TestClient, project_id: int, admin_headers: dict[str, str], dtype: str, reach: float
) -> None:
    """Finite values near the largest float are an image like any other: stored, featurized
    and segmented as the same picture in [-1, 1] is, not accepted and then failed in the
    background."""
    near_zero = _float_tiff_mean_iou(client, project_id, admin_headers, dtype, 1.0)
    extreme = _float_tiff_mean_iou(client, project_id, admin_headers, dtype, reach)
    assert extreme == pytest.approx(near_zero, abs=0.01)
    assert extreme > 0.75
