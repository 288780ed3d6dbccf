"""Each user's display of an image's measured channels over REST: saved per user, refused whole
when wrong, and the tiles it draws checked pixel by pixel against the channels themselves
(coloured, stretched and added by hand here, halved by hand for the levels below)."""

import io
from collections.abc import Callable

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.db.models import DisplaySetting, Role, StoredArray
from app.engine.image.channels import Multichannel
from app.engine.image.deep_zoom import DeepZoom
from app.engine.image.featurize import Recipe, featurize
from benchmarks.ome import ome_tiff
from tests.api.test_image_featurization import upload_image, wait_ready
from tests.api.test_slides import NAMES, slide_client, slide_file, slide_planes  # noqa: F401
from tests.api.test_tiff_uploads import cells, upload_tiff
from tests.conftest import admin_project, row_counts

pytestmark = pytest.mark.db


def _tile(client: TestClient, headers: dict[str, str], url: str) -> np.ndarray:
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return np.asarray(Image.open(io.BytesIO(response.content)))


def _drawn(channels: np.ndarray, shown: list[tuple[int, str, float, float]]) -> np.ndarray:
    """(h, w, C) channels drawn by hand: each (channel, colour, low, high) stretched, coloured
    and added, in float64."""
    rgb = np.zeros((*channels.shape[:2], 3))
    for k, colour, low, high in shown:
        level = np.clip((channels[:, :, k].astype(np.float64) - low) / (high - low), 0, 1)
        for c in range(3):
            rgb[:, :, c] += int(colour[2 * c : 2 * c + 2], 16) / 255 * level
    return np.round(np.clip(rgb, 0, 1) * 255)


def _halved(channels: np.ndarray) -> np.ndarray:
    """Each 2 x 2 block's mean, rounded, by hand (the sides here are even)."""
    h, w, c = channels.shape
    blocks = channels.reshape(h // 2, 2, w // 2, 2, c).astype(np.float64)
    return np.floor(blocks.mean(axis=(1, 3)) + 0.5)


def test_a_user_keeps_a_display_of_the_channels_and_tiles_follow_it(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    make_user: Callable[..., dict[str, str]],
    session: Session,
) -> None:
    planes, truth = cells()  # 64 x 96, DAPI, GFP, RFP, Cy5
    created = upload_tiff(client, project_id, admin_headers, ome_tiff(planes, NAMES), truth)
    base = f"/api/v1/datasets/{created['id']}"
    channels = np.moveaxis(planes, 0, 2)

    first = client.get(f"{base}/display", headers=admin_headers).json()
    assert first["saved"] is False
    assert [c["name"] for c in first["channels"]] == NAMES
    assert first["channels"] == first["defaults"]
    ranges = Multichannel.of(planes, NAMES).ranges()
    for got, (low, high), k in zip(first["ranges"], ranges, range(4), strict=True):
        assert got["low"] == pytest.approx(low) and got["high"] == pytest.approx(high)
        assert got["minimum"] == planes[k].min() and got["maximum"] == planes[k].max()

    # Only GFP, in green, stretched over 4,000..34,000; then GFP and a dim DAPI in magenta.
    zoom = DeepZoom(96, 64)
    top = zoom.max_level
    gfp = "off,00ff00:4000:34000,off,off"
    got = _tile(client, admin_headers, f"{base}/image_files/{top}/0_0.png?display={gfp}")
    np.testing.assert_allclose(got, _drawn(channels, [(1, "00ff00", 4000, 34000)]), atol=1)
    assert got[:, :, 0].max() == 0 and got[:, :, 1].max() == 255  # the disc saturates
    two = "ff00ff:250:600,00ff00:4000:34000,off,off"
    shown = [(0, "ff00ff", 250, 600), (1, "00ff00", 4000, 34000)]
    got = _tile(client, admin_headers, f"{base}/image_files/{top}/0_0.png?display={two}")
    np.testing.assert_allclose(got, _drawn(channels, shown), atol=1)
    got = _tile(client, admin_headers, f"{base}/image_files/{top - 1}/0_0.png?display={two}")
    np.testing.assert_allclose(got, _drawn(_halved(channels), shown), atol=1)

    # Saved, read back, and a viewer of the project keeps a display of their own.
    body = {
        "channels": [
            {"visible": True, "colour": "ff00ff", "low": 250, "high": 600},
            {"visible": True, "colour": "00ff00", "low": 4000.0, "high": 34000.0},
            {"visible": False, "colour": "ff0000", "low": 0, "high": 1},
            {"visible": False, "colour": "00ffff", "low": 0, "high": 1},
        ]
    }
    response = client.put(f"{base}/display", json=body, headers=admin_headers)
    assert response.status_code == 200, response.text
    saved = response.json()
    assert saved["saved"] is True and saved["tile_query"] == two
    assert client.get(f"{base}/display", headers=admin_headers).json() == saved
    viewer = make_user("viewer", project_id, Role.viewer)
    assert client.get(f"{base}/display", headers=viewer).json()["saved"] is False
    mine = {"channels": [dict(c, visible=True) for c in body["channels"]]}
    assert client.put(f"{base}/display", json=mine, headers=viewer).status_code == 200
    assert client.get(f"{base}/display", headers=admin_headers).json() == saved

    # Wrong displays are refused with the channel's name; nothing is written.
    before = row_counts(session)
    wrong = [
        ({"channels": body["channels"][:3]}, "has 4 channels"),
        ({"channels": [body["channels"][0] | {"low": 700}, *body["channels"][1:]]}, "'DAPI'"),
        ({"channels": [*body["channels"][:3], body["channels"][3] | {"colour": "red"}]}, "colour"),
        ({"channels": [*body["channels"][:3], {"visible": True}]}, "low"),
    ]
    for wrong_body, reason in wrong:
        response = client.put(f"{base}/display", json=wrong_body, headers=admin_headers)
        assert response.status_code == 422, response.text
        assert reason in response.text, response.text
    assert row_counts(session) == before
    assert client.get(f"{base}/display", headers=admin_headers).json() == saved
    for query, reason in (
        ("off,off,off", "has 4 channels"),
        ("ffffff:nan:1,off,off,off", "finite"),
        ("ffffff:5:1,off,off,off", "must be above the value shown black (5)"),
        ("ffffff,off,off,off", "RRGGBB:low:high"),
    ):
        response = client.get(f"{base}/image_files/{top}/0_0.png?display={query}", headers=viewer)
        assert response.status_code == 422, (query, response.text)
        assert reason in response.text, (query, response.text)

    # Forgotten: the default again. The dataset's deletion takes everyone's displays with it.
    assert client.delete(f"{base}/display", headers=admin_headers).status_code == 204
    assert client.get(f"{base}/display", headers=admin_headers).json()["saved"] is False
    assert client.delete(base, headers=admin_headers).status_code == 204
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(DisplaySetting)) == 0


def test_a_photo_or_a_table_has_no_channel_display(
    client: TestClient, project_id: int, admin_headers: dict[str, str], iris_id: int
) -> None:
    picture = np.random.default_rng(0).integers(0, 256, size=(40, 50, 3), dtype=np.uint8)
    photo = upload_image(client, project_id, admin_headers, picture).json()["id"]
    for dataset_id, reason in ((photo, "is a photo"), (iris_id, "is a table")):
        response = client.get(f"/api/v1/datasets/{dataset_id}/display", headers=admin_headers)
        assert response.status_code == 422 and reason in response.text, response.text
    response = client.get(
        f"/api/v1/datasets/{photo}/image_files/6/0_0.png?display=ffffff:0:1", headers=admin_headers
    )
    assert response.status_code == 422 and "is a photo" in response.text


def test_a_slide_is_drawn_from_its_channels_and_its_stored_pixels(
    slide_client: TestClient,  # noqa: F811
) -> None:
    client = slide_client
    headers, project = admin_project(client, "S")
    planes, _ = slide_planes()  # 700 x 620 x 4, stored as a slide
    response = client.post(
        f"/api/v1/projects/{project}/datasets",
        files={"file": ("slide.ome.tif", slide_file(planes), "image/tiff")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    dataset_id = response.json()["id"]
    base = f"/api/v1/datasets/{dataset_id}"
    channels = np.moveaxis(planes, 0, 2)
    zoom = DeepZoom(620, 700)
    top = zoom.max_level

    # The upload wrote the channels below the full level, and no picture of them.
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    with factory() as session:
        kinds = set(
            session.scalars(select(StoredArray.kind).where(StoredArray.dataset_id == dataset_id))
        )
    assert not any(k.startswith("picture_level_") for k in kinds), kinds
    assert {f"channels_level_{level}" for level in range(top)} <= kinds
    assert f"channels_level_{top}" not in kinds  # the full level is the stored pixels

    # By default as the composite always was; with a display, as drawn by hand.
    display = client.get(f"{base}/display", headers=headers).json()
    default = [(k, c["colour"], c["low"], c["high"]) for k, c in enumerate(display["defaults"])]
    x0, y0, x1, y1 = zoom.tile_box(top, 1, 2)
    got = _tile(client, headers, f"{base}/image_files/{top}/1_2.png")
    np.testing.assert_allclose(got, _drawn(channels[y0:y1, x0:x1], default), atol=1)
    gfp = "off,ffffff:4000:34000,off,off"
    got = _tile(client, headers, f"{base}/image_files/{top - 1}/0_1.png?display={gfp}")
    x0, y0, x1, y1 = zoom.tile_box(top - 1, 0, 1)
    want = _drawn(_halved(channels)[y0:y1, x0:x1], [(1, "ffffff", 4000, 34000)])
    np.testing.assert_allclose(got, want, atol=1)

    # A slide stored without the channels' pyramid gets it on the first tile that needs it.
    with factory() as session:
        session.execute(delete(StoredArray).where(StoredArray.kind.like("channels_level_%")))
        session.commit()
    got = _tile(client, headers, f"{base}/image_files/{top - 1}/0_1.png?display={gfp}")
    np.testing.assert_allclose(got, want, atol=1)


def test_the_features_can_use_only_the_channels_the_expert_picks(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    planes, truth = cells()
    created = upload_tiff(client, project_id, admin_headers, ome_tiff(planes, NAMES), truth)
    dataset_id = created["id"]
    wait_ready(client, admin_headers, dataset_id)
    url = f"/api/v1/datasets/{dataset_id}/featurize"

    # A channel the image lacks, or a choice out of order: refused, nothing queued.
    for channels, reason in ((["GFP", "YFP"], "no channel 'YFP'"), (["GFP", "DAPI"], "order")):
        response = client.post(url, json={"channels": channels}, headers=admin_headers)
        assert response.status_code == 422 and reason in response.text, response.text
    assert (
        client.get(f"/api/v1/datasets/{dataset_id}", headers=admin_headers).json()["status"]
        == "ready"
    )

    response = client.post(url, json={"channels": ["DAPI", "GFP"]}, headers=admin_headers)
    assert response.status_code == 202, response.text
    dataset = wait_ready(client, admin_headers, dataset_id)
    assert dataset["status"] == "ready" and dataset["featurization"]["recipe"]["channels"] == [
        "DAPI",
        "GFP",
    ]
    features = client.get(f"/api/v1/datasets/{dataset_id}/features", headers=admin_headers)
    got = np.load(io.BytesIO(features.content))
    alone = featurize(Multichannel(planes[:2], ("DAPI", "GFP")), Recipe())
    np.testing.assert_allclose(np.abs(got), np.abs(alone.features), atol=1e-4)


def test_a_photo_s_channels_are_chosen_by_colour_not_by_name(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    picture = np.random.default_rng(0).integers(0, 256, size=(40, 50, 3), dtype=np.uint8)
    photo = upload_image(client, project_id, admin_headers, picture).json()["id"]
    wait_ready(client, admin_headers, photo)
    response = client.post(
        f"/api/v1/datasets/{photo}/featurize", json={"channels": ["red"]}, headers=admin_headers
    )
    assert response.status_code == 422 and "chosen by colour" in response.text, response.text
