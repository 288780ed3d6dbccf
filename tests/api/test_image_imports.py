"""Images imported by reference (a file:// root): an OME-Zarr image and a pyramidal tiled
OME-TIFF are registered from their metadata and read in place, never copied: the featurization
reads windows of the full level (its features equal the picture featurized whole), the viewer's
tiles come from the source's own levels, a changed source is refused by name, and what is not
an image a slide can be is refused with the reason."""

import io
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tifffile
import zarr
from fastapi.testclient import TestClient
from PIL import Image

from app.engine.image import slide_featurize
from app.engine.image.channels import Multichannel, composite
from app.engine.image.deep_zoom import DeepZoom
from app.engine.image.featurize import Recipe, featurize
from app.store.sources import label_images
from tests.api.test_imports import post_import
from tests.api.test_runs import wait
from tests.api.test_slides import BLOCK, HEIGHT, NAMES, WIDTH, slide_planes
from tests.conftest import admin_project, row_counts

pytestmark = pytest.mark.db


def write_ome_zarr(path: Path, planes: np.ndarray, levels: int = 1) -> None:
    """(C, H, W) planes as an NGFF 0.4 image (Zarr v2) of ``levels`` resolution levels."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    for k in range(levels):
        root.create_array(str(k), data=planes[:, :: 2**k, :: 2**k], chunks=(1, 128, 128))
    root.attrs["multiscales"] = [
        {
            "version": "0.4",
            "axes": [
                {"name": "c", "type": "channel"},
                {"name": "y", "type": "space"},
                {"name": "x", "type": "space"},
            ],
            "datasets": [{"path": str(k)} for k in range(levels)],
        }
    ]
    root.attrs["omero"] = {"channels": [{"label": name} for name in NAMES]}


def write_pyramid_tiff(path: Path, planes: np.ndarray, levels: int = 3) -> None:
    """(C, H, W) planes as a tiled OME-TIFF with ``levels - 1`` reduced levels (SubIFDs)."""
    with tifffile.TiffWriter(path, ome=True) as tiff:
        tiff.write(
            planes, subifds=levels - 1, tile=(128, 128), compression="zlib",
            metadata={"axes": "CYX", "Channel": {"Name": NAMES}},
        )  # fmt: skip
        for k in range(1, levels):
            tiff.write(
                planes[:, :: 2**k, :: 2**k], subfiletype=1, tile=(128, 128), compression="zlib"
            )


@pytest.fixture
def image_client(
    monkeypatch: pytest.MonkeyPatch, client_with: Callable[..., TestClient], tmp_path: Path
) -> tuple[TestClient, Path]:
    monkeypatch.setattr(slide_featurize, "SLIDE_BLOCK", BLOCK)
    shared = tmp_path / "shared"
    shared.mkdir()
    # A small IMAGE_WHOLE_PIXELS: an upload of these pictures is a slide too
    return client_with(import_sources={f"file://{shared}/": {}}, image_whole_pixels=100_000), shared


def _ready(client: TestClient, headers: dict[str, str], dataset_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=headers).json()
        if dataset["status"] != "featurizing":
            return dataset  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError("featurization did not finish")


def _tile(client: TestClient, headers: dict[str, str], url: str) -> np.ndarray:
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return np.asarray(Image.open(io.BytesIO(response.content)))


def test_an_ome_zarr_image_is_featurized_in_place_as_the_whole_picture(
    image_client: tuple[TestClient, Path],
) -> None:
    client, shared = image_client
    headers, project = admin_project(client, "I")
    planes, _ = slide_planes()
    write_ome_zarr(shared / "cells.ome.zarr", planes)
    written = sorted(str(p.relative_to(shared)) for p in shared.rglob("*"))
    response = post_import(
        client, project, headers, name="cells", url=f"file://{shared}/cells.ome.zarr"
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["kind"] == "image" and created["status"] == "featurizing"
    image = created["meta"]["image"]
    assert (image["width"], image["height"], image["channels"]) == (WIDTH, HEIGHT, NAMES)
    assert image["tiled"] is True and created["meta"]["source"]["format"] == "ome-zarr"
    # The viewer works at once, from the source.
    zoom = DeepZoom(WIDTH, HEIGHT)
    descriptor = client.get(f"/api/v1/datasets/{created['id']}/image.dzi", headers=headers)
    assert descriptor.status_code == 200 and f'Width="{WIDTH}"' in descriptor.text
    full = _tile(
        client, headers, f"/api/v1/datasets/{created['id']}/image_files/{zoom.max_level}/0_0.png"
    )
    x0, y0, x1, y1 = zoom.tile_box(zoom.max_level, 0, 0)
    ranges = np.asarray(image["ranges"])
    assert np.array_equal(full, composite(planes[:, y0:y1, x0:x1], ranges))
    # Drawn with a display of its channels: GFP alone, in white, over 4,000..34,000.
    display = client.get(f"/api/v1/datasets/{created['id']}/display", headers=headers).json()
    assert [c["name"] for c in display["channels"]] == NAMES and display["saved"] is False
    gfp = "off,ffffff:4000:34000,off,off"
    shown = _tile(
        client,
        headers,
        f"/api/v1/datasets/{created['id']}/image_files/{zoom.max_level}/0_0.png?display={gfp}",
    )
    level = np.clip((planes[1, y0:y1, x0:x1].astype(float) - 4000) / 30000, 0, 1)
    np.testing.assert_allclose(shown, np.round(np.repeat(level[:, :, None], 3, 2) * 255), atol=1)
    # A source of one level: a tile of the whole picture is sampled from it (every 4th pixel
    # of 8 per tile pixel here), then scaled down; never the whole level read at once.
    small = zoom.max_level - 3
    tile = _tile(client, headers, f"/api/v1/datasets/{created['id']}/image_files/{small}/0_0.png")
    x0, y0, x1, y1 = zoom.tile_box(small, 0, 0)
    sampled = composite(planes[:, y0 * 8 : y1 * 8 : 4, x0 * 8 : x1 * 8 : 4], ranges)
    expected = np.asarray(Image.fromarray(sampled).resize((x1 - x0, y1 - y0), Image.Resampling.BOX))
    assert np.array_equal(tile, expected)

    dataset = _ready(client, headers, created["id"])
    assert dataset["status"] == "ready", dataset
    whole = featurize(Multichannel.of(planes, NAMES), Recipe(), block_size=BLOCK)
    assert dataset["n_items"] == whole.n_items
    features = client.get(f"/api/v1/datasets/{created['id']}/features", headers=headers)
    got = np.load(io.BytesIO(features.content))
    assert np.abs(got - whole.features).max() <= 1e-5 * np.abs(whole.features).max()
    original = client.get(f"/api/v1/datasets/{created['id']}/image/original", headers=headers)
    assert original.status_code == 422 and "read in place" in original.text
    assert sorted(str(p.relative_to(shared)) for p in shared.rglob("*")) == written


def test_a_pyramidal_tiff_serves_tiles_from_its_levels_and_is_segmented(
    image_client: tuple[TestClient, Path],
) -> None:
    client, shared = image_client
    headers, project = admin_project(client, "I")
    planes, truth = slide_planes(1)
    path = shared / "slide.ome.tif"
    write_pyramid_tiff(path, planes)
    response = post_import(client, project, headers, name="slide", url=f"file://{path}")
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["meta"]["source"]["levels"][1][:2] == [HEIGHT // 2, WIDTH // 2]
    ranges = np.asarray(created["meta"]["image"]["ranges"])
    zoom = DeepZoom(WIDTH, HEIGHT)
    # One level down is the source's second level, read as it is.
    level = zoom.max_level - 1
    shown = _tile(client, headers, f"/api/v1/datasets/{created['id']}/image_files/{level}/1_0.png")
    x0, y0, x1, y1 = zoom.tile_box(level, 1, 0)
    half = planes[:, ::2, ::2]
    assert np.array_equal(shown, composite(half[:, y0:y1, x0:x1], ranges))

    assert _ready(client, headers, created["id"])["status"] == "ready"
    strokes = {
        "cell": [{"points": [[250, 300], [360, 420]], "radius": 6.5}],
        "background": [{"points": [[20, 20], [60, 650]], "radius": 4}],
    }
    for label, drawn in strokes.items():
        made = client.post(
            f"/api/v1/datasets/{created['id']}/annotations",
            json={"kind": "scribble", "label": label, "strokes": drawn},
            headers=headers,
        )
        assert made.status_code == 201, made.text
    started = client.post(
        "/api/v1/runs", json={"dataset_id": created["id"], "algorithm": "ppc"}, headers=headers
    )
    assert started.status_code == 202, started.text
    run = wait(client, headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    png = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=headers)
    mask = np.asarray(Image.open(io.BytesIO(png.content)))
    disc = truth == 1
    inside = np.bincount(mask[disc]).argmax()
    assert (mask[disc] == inside).mean() > 0.9 and (mask[~disc] != inside).mean() > 0.9

    # The file changes: featurizing it again is refused, naming it.
    write_pyramid_tiff(path, planes[:, ::-1].copy())
    os.utime(path, (2_000_000_000, 2_000_000_000))
    again = client.post(f"/api/v1/datasets/{created['id']}/featurize", json={}, headers=headers)
    assert again.status_code in (200, 202), again.text
    failed = _ready(client, headers, created["id"])
    assert failed["status"] == "failed" and "slide.ome.tif" in failed["featurization"]["error"]
    assert "changed" in failed["featurization"]["error"]


def test_what_is_not_an_image_read_in_place_is_refused_and_registers_nothing(
    image_client: tuple[TestClient, Path], session: Any
) -> None:
    client, shared = image_client
    headers, project = admin_project(client, "I")
    (shared / "fake.tif").write_bytes(b"not a tiff at all")
    plain = zarr.open_group(str(shared / "plain.zarr"), mode="w", zarr_format=2)
    plain.create_array("0", data=np.zeros((4, 4)))
    plain.attrs["note"] = "no multiscales"
    planes, _ = slide_planes()
    write_ome_zarr(shared / "ok.ome.zarr", planes)
    before = row_counts(session)
    cases = [
        ({"url": f"file://{shared}/fake.tif"}, "fake.tif"),
        ({"url": f"file://{shared}/plain.zarr", "format": "ome-zarr"}, "multiscales"),
        ({"url": f"file://{shared}/ok.ome.zarr", "columns": ["x"]}, "pixels"),
    ]
    for body, words in cases:
        response = post_import(client, project, headers, name="bad", **body)
        assert response.status_code == 422, response.text
        assert words in response.text, response.text
    session.expire_all()
    assert row_counts(session) == before


def test_an_uploaded_pyramidal_tiff_is_taken_from_its_full_level(
    image_client: tuple[TestClient, Path], tmp_path: Path
) -> None:
    """The same file uploaded: a TIFF with reduced levels (as QuPath and bfconvert write them)
    is a slide read from its full level (its Zarr view is a group of levels, not one array)."""
    client, _ = image_client
    headers, project = admin_project(client, "I")
    planes, _ = slide_planes()
    path = tmp_path / "pyramid.ome.tif"
    write_pyramid_tiff(path, planes)
    response = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("pyramid.ome.tif", path.read_bytes(), "image/tiff")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    dataset = _ready(client, headers, response.json()["id"])
    assert dataset["status"] == "ready", dataset
    whole = featurize(Multichannel.of(planes, NAMES), Recipe(), block_size=BLOCK)
    features = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=headers)
    got = np.load(io.BytesIO(features.content))
    assert got.shape == whole.features.shape
    assert np.abs(got - whole.features).max() <= 1e-5 * np.abs(whole.features).max()


def test_a_runs_mask_is_written_back_beside_an_ome_zarr_image_when_asked_for(
    image_client: tuple[TestClient, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opted in at import (its labels/ checked writable then), a run's mask goes beside the
    image as an NGFF label image: value = cluster id + 1, every level the mask halved, the
    labels group listing it; without the opt-in, or for a TIFF, it is refused with why."""
    client, shared = image_client
    monkeypatch.setattr(label_images, "LABEL_CHUNK", 256)  # levels down to 256 px: three
    headers, project = admin_project(client, "I")
    planes, truth = slide_planes(2)
    write_ome_zarr(shared / "w.ome.zarr", planes, levels=2)
    plain = post_import(client, project, headers, name="p", url=f"file://{shared}/w.ome.zarr")
    made = post_import(
        client, project, headers, name="w", url=f"file://{shared}/w.ome.zarr", write_labels=True
    )
    assert made.status_code == 201 and plain.status_code == 201, made.text
    assert made.json()["meta"]["source"]["write_labels"] is True
    dataset_id = made.json()["id"]
    assert _ready(client, headers, dataset_id)["status"] == "ready"
    assert _ready(client, headers, plain.json()["id"])["status"] == "ready"
    assert not (shared / "w.ome.zarr" / "labels" / ".workbench-write-check").exists()
    strokes = {
        "cell": [{"points": [[250, 300], [360, 420]], "radius": 6.5}],
        "background": [{"points": [[20, 20], [60, 650]], "radius": 4}],
    }
    for label, drawn in strokes.items():
        client.post(
            f"/api/v1/datasets/{dataset_id}/annotations",
            json={"kind": "scribble", "label": label, "strokes": drawn},
            headers=headers,
        ).raise_for_status()
    started = client.post(
        "/api/v1/runs", json={"dataset_id": dataset_id, "algorithm": "ppc"}, headers=headers
    )
    run = wait(client, headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    written = client.post(f"/api/v1/runs/{run['id']}/labels/write-back", headers=headers)
    assert written.status_code == 201, written.text
    body = written.json()
    assert body["name"] == f"run-{run['id']}" and body["url"].endswith(f"labels/run-{run['id']}")
    png = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=headers)
    mask = np.asarray(Image.open(io.BytesIO(png.content))).astype(np.int64)
    group = zarr.open_group(str(shared / "w.ome.zarr"), mode="r")
    assert list(group["labels"].attrs["labels"]) == [body["name"]]
    label = group["labels"][body["name"]]
    assert np.array_equal(np.asarray(label["0"]), mask + 1)
    assert body["levels"] == 3
    for level in (1, 2):
        step = 2**level
        assert np.array_equal(np.asarray(label[str(level)]), (mask + 1)[::step, ::step])
    attrs = dict(label.attrs)
    assert attrs["image-label"]["source"]["image"] == "../../"
    assert [c["label-value"] for c in attrs["image-label"]["colors"]] == list(
        range(1, body["n_labels"] + 1)
    )
    disc = truth == 1
    assert (mask[disc] == np.bincount(mask[disc]).argmax()).mean() > 0.9

    refused = client.post(
        f"/api/v1/datasets/{plain.json()['id']}/annotations",
        json={"kind": "scribble", "label": "cell", "strokes": strokes["cell"]},
        headers=headers,
    )
    assert refused.status_code == 201
    other = client.post(
        "/api/v1/runs", json={"dataset_id": plain.json()["id"], "algorithm": "cec"},
        headers=headers,
    )  # fmt: skip
    other_run = wait(client, headers, other.json()["id"])
    no_opt_in = client.post(f"/api/v1/runs/{other_run['id']}/labels/write-back", headers=headers)
    assert no_opt_in.status_code == 422 and "write_labels" in no_opt_in.text
    tiff = shared / "t.ome.tif"
    write_pyramid_tiff(tiff, planes)
    not_zarr = post_import(
        client, project, headers, name="t", url=f"file://{tiff}", write_labels=True
    )
    assert not_zarr.status_code == 422 and "OME-Zarr" in not_zarr.text
