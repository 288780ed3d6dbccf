"""Whole slides over REST: a TIFF above IMAGE_WHOLE_PIXELS is read in bands into the array
store, featurized block by block from there, painted, segmented and exported, with results
equal to the same picture featurized whole in memory in the same blocks."""

import io
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy.engine import Engine

from app.config import Settings
from app.engine.image import slide_featurize
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Recipe, featurize
from app.main import create_app
from tests.conftest import ADMIN_PASSWORD, _empty_tables, token_headers

pytestmark = pytest.mark.db

HEIGHT, WIDTH = 700, 620
BLOCK = 256
NAMES = ["DAPI", "GFP", "RFP", "Cy5"]


def slide_planes(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(C, H, W) uint16 with a bright disc in GFP and a dim one in DAPI; truth per pixel."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:HEIGHT, :WIDTH]
    truth = ((rows - 350) ** 2 + (cols - 300) ** 2 < 180**2).astype(int)
    planes = np.stack(
        [
            300 + 250 * truth + rng.normal(0, 30, truth.shape),
            4_000 + 30_000 * truth + rng.normal(0, 4_000, truth.shape),
            1_000 + rng.normal(0, 120, truth.shape),
            20_000 + rng.normal(0, 2_500, truth.shape),
        ]
    )
    return np.clip(planes, 0, 65_535).astype(np.uint16), truth


def slide_file(planes: np.ndarray, **options: Any) -> bytes:
    buffer = io.BytesIO()
    tifffile.imwrite(
        buffer, planes, ome=True, metadata={"axes": "CYX", "Channel": {"Name": NAMES}}, **options
    )
    return buffer.getvalue()


@pytest.fixture
def slide_client(
    db_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    monkeypatch.setattr(slide_featurize, "SLIDE_BLOCK", BLOCK)
    app = create_app(settings.model_copy(update={"image_whole_pixels": 100_000}))
    with TestClient(app) as test_client:
        yield test_client
    _empty_tables(db_engine)


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
    headers = token_headers(client, "admin", ADMIN_PASSWORD)
    project = client.post("/api/v1/projects", json={"name": "S"}, headers=headers).json()["id"]
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
