"""Deep Zoom over REST: an image's pyramid (built at upload; on first request for an image
stored without one) and a run's mask as tiles, checked pixel by pixel against the image, the
mask and the engine's halving."""

import io
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.models import StoredArray
from app.engine.image.deep_zoom import DeepZoom, halve_mask, halve_picture
from app.services.deep_zoom import PALETTE
from tests.api.test_image_featurization import upload_image, wait_ready
from tests.api.test_image_sessions import scribble
from tests.api.test_runs import upload_csv, wait
from tests.api.test_tiff_uploads import cells, ome_tiff, upload_tiff

pytestmark = pytest.mark.db

HEIGHT, WIDTH = 300, 520  # three tile columns and two rows at full size
NS = "{http://schemas.microsoft.com/deepzoom/2008}"


def _picture(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)


def _tile(client: TestClient, headers: dict[str, str], url: str) -> np.ndarray:
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return np.asarray(Image.open(io.BytesIO(response.content)))


def _expected(level_pixels: np.ndarray, zoom: DeepZoom, level: int, column: int, row: int):  # type: ignore[no-untyped-def]
    x0, y0, x1, y1 = zoom.tile_box(level, column, row)
    return level_pixels[y0:y1, x0:x1]


def test_an_image_is_served_as_deep_zoom_tiles(
    client: TestClient, project_id: int, admin_headers: dict[str, str], make_user
) -> None:  # type: ignore[no-untyped-def]
    picture = _picture()
    created = upload_image(client, project_id, admin_headers, picture).json()
    base = f"/api/v1/datasets/{created['id']}"

    response = client.get(f"{base}/image.dzi", headers=admin_headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/xml")
    root = ET.fromstring(response.text)
    size = root.find(f"{NS}Size")
    assert size is not None and size.attrib == {"Width": str(WIDTH), "Height": str(HEIGHT)}
    zoom = DeepZoom(WIDTH, HEIGHT)
    top = zoom.max_level

    # Full size: the uploaded pixels, overlap included; one level down: the halved picture.
    for column, row in ((0, 0), (2, 1), (1, 0)):
        got = _tile(client, admin_headers, f"{base}/image_files/{top}/{column}_{row}.png")
        np.testing.assert_array_equal(got, _expected(picture, zoom, top, column, row))
    half = halve_picture(picture)
    got = _tile(client, admin_headers, f"{base}/image_files/{top - 1}/1_0.png")
    np.testing.assert_array_equal(got, _expected(half, zoom, top - 1, 1, 0))
    assert _tile(client, admin_headers, f"{base}/image_files/0/0_0.png").shape[:2] == (1, 1)

    # Tiles the pyramid does not have; names that are not tiles; levels past the top.
    for path, code in (
        (f"image_files/{top}/3_0.png", 404),
        (f"image_files/{top}/0_2.png", 404),
        (f"image_files/{top + 1}/0_0.png", 404),
        ("image_files/41/0_0.png", 422),
        (f"image_files/{top}/0-0.png", 422),
        (f"image_files/{top}/0_0.jpg", 422),
    ):
        response = client.get(f"{base}/{path}", headers=admin_headers)
        assert response.status_code == code, (path, response.text)

    # Someone outside the project sees nothing of it.
    outsider = make_user("outsider")
    assert client.get(f"{base}/image.dzi", headers=outsider).status_code == 404
    assert client.get(f"{base}/image_files/0/0_0.png", headers=outsider).status_code == 404


def test_a_table_has_no_deep_zoom(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    X = np.random.default_rng(0).normal(size=(20, 2))
    dataset_id = upload_csv(client, project_id, admin_headers, X)
    response = client.get(f"/api/v1/datasets/{dataset_id}/image.dzi", headers=admin_headers)
    assert response.status_code == 422
    assert "is a table, not an image" in response.text


def test_an_image_stored_without_a_pyramid_gets_one_on_first_request(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    picture = _picture(1)
    dataset_id = upload_image(client, project_id, admin_headers, picture).json()["id"]
    levels = select(StoredArray).where(
        StoredArray.dataset_id == dataset_id, StoredArray.kind.like("picture_level_%")
    )
    assert len(session.scalars(levels).all()) == DeepZoom(WIDTH, HEIGHT).max_level + 1
    # As an image uploaded before pyramids were made at upload.
    session.execute(delete(StoredArray).where(StoredArray.kind.like("picture_level_%")))
    session.commit()
    zoom = DeepZoom(WIDTH, HEIGHT)
    got = _tile(
        client, admin_headers, f"/api/v1/datasets/{dataset_id}/image_files/{zoom.max_level}/1_1.png"
    )
    np.testing.assert_array_equal(got, _expected(picture, zoom, zoom.max_level, 1, 1))
    session.expire_all()
    assert len(session.scalars(levels).all()) == zoom.max_level + 1  # built once, kept


def test_a_multichannel_tiff_is_tiled_as_the_composite_the_browser_shows(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    planes, truth = cells()
    created = upload_tiff(client, project_id, admin_headers, ome_tiff(planes, list("ABCD")), truth)
    shown = client.get(f"/api/v1/datasets/{created['id']}/image", headers=admin_headers)
    composite = np.asarray(Image.open(io.BytesIO(shown.content)))
    height, width = composite.shape[:2]
    zoom = DeepZoom(width, height)
    got = _tile(
        client,
        admin_headers,
        f"/api/v1/datasets/{created['id']}/image_files/{zoom.max_level}/0_0.png",
    )
    np.testing.assert_array_equal(got, _expected(composite, zoom, zoom.max_level, 0, 0))


def test_a_runs_mask_is_served_as_coloured_tiles(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    left = np.broadcast_to(np.arange(WIDTH) < WIDTH // 2, (HEIGHT, WIDTH))
    picture = np.where(left[..., None], [200, 40, 40], [40, 40, 200]).astype(np.uint8)
    picture = np.clip(picture + np.random.default_rng(2).normal(0, 8, picture.shape), 0, 255)
    created = upload_image(client, project_id, admin_headers, picture.astype(np.uint8)).json()
    dataset_id = created["id"]
    wait_ready(client, admin_headers, dataset_id)
    for body in (scribble("red", [[40, 50], [60, 250]]), scribble("blue", [[400, 50], [480, 250]])):
        response = client.post(
            f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=admin_headers
        )
        assert response.status_code == 201, response.text
    response = client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset_id, "algorithm": "ppc", "params": {}},
        headers=admin_headers,
    )
    run = wait(client, admin_headers, response.json()["id"])
    assert run["status"] == "succeeded", run
    png = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=admin_headers)
    mask = np.asarray(Image.open(io.BytesIO(png.content))).astype(np.int64)
    assert len(np.unique(mask)) >= 2

    base = f"/api/v1/runs/{run['id']}"
    response = client.get(f"{base}/result.dzi", headers=admin_headers)
    assert response.status_code == 200, response.text
    assert ET.fromstring(response.text).find(f"{NS}Size").attrib["Width"] == str(WIDTH)  # type: ignore[union-attr]
    zoom = DeepZoom(WIDTH, HEIGHT)
    top = zoom.max_level
    palette = np.array([[int(c[i : i + 2], 16) for i in (0, 2, 4)] for c in PALETTE])
    got = _tile(client, admin_headers, f"{base}/result_files/{top}/1_0.png")
    np.testing.assert_array_equal(got, palette[_expected(mask, zoom, top, 1, 0) % len(palette)])
    # The viewer's own colours, cycled; a level down keeps one id of each 2 x 2 block.
    colours = np.array([[0, 0, 0], [255, 255, 255], [255, 0, 0]])
    url = f"{base}/result_files/{top - 1}/0_0.png?colours=000000,ffffff,FF0000"
    got = _tile(client, admin_headers, url)
    np.testing.assert_array_equal(
        got, colours[_expected(halve_mask(mask), zoom, top - 1, 0, 0) % 3]
    )
    for query in ("colours=red", "colours=12345", "colours=" + ",".join(["000000"] * 1025)):
        response = client.get(f"{base}/result_files/0/0_0.png?{query}", headers=admin_headers)
        assert response.status_code == 422, (query, response.text)


def test_a_run_without_a_mask_has_no_deep_zoom(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    X = np.random.default_rng(0).normal(size=(30, 2))
    dataset_id = upload_csv(client, project_id, admin_headers, X)
    response = client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset_id, "algorithm": "cec", "params": {"n_clusters": 2}},
        headers=admin_headers,
    )
    run = wait(client, admin_headers, response.json()["id"])
    response = client.get(f"/api/v1/runs/{run['id']}/result.dzi", headers=admin_headers)
    assert response.status_code == 409
    assert "only runs on images have a mask" in response.text
