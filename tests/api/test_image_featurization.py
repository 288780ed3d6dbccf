"""Image datasets over REST: upload (with an optional ground-truth index image), background
featurization with progress, featurize again with another recipe, refusals that write nothing."""

import io
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from PIL import Image
from sqlalchemy.orm import Session

from tests.conftest import row_counts

pytestmark = pytest.mark.db


def two_regions(
    height: int = 48, width: int = 64, seed: int = 0, noise: float = 25.0
) -> tuple[np.ndarray, np.ndarray]:
    """A noisy red disc on a noisy blue background, and its class per pixel."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:height, :width]
    truth = ((rows - height / 2) ** 2 + (cols - width / 3) ** 2 < (height / 3) ** 2).astype(int)
    colours = np.array([[40, 60, 200], [210, 50, 40]], dtype=float)
    pixels = colours[truth] + rng.normal(0, noise, size=(height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), truth


def png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def upload_image(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    pixels: NDArray[np.uint8],
    truth: NDArray[np.integer] | None = None,
    name: str = "picture",
):  # type: ignore[no-untyped-def]
    """POST the RGB `pixels` as `name`.png, with `truth` (each pixel's class) as its
    ground-truth index image; the response."""
    files = {"file": (f"{name}.png", png(pixels), "image/png")}
    if truth is not None:
        files["ground_truth"] = ("truth.png", png(truth.astype(np.uint8)), "image/png")
    return client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=headers)


def wait_ready(client: TestClient, headers: dict[str, str], dataset_id: int) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 120
    while True:
        dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=headers).json()
        if dataset["status"] in ("ready", "failed"):
            return dataset  # type: ignore[no-any-return]
        assert dataset["status"] == "featurizing"
        assert 0.0 <= dataset["featurization"]["progress"] <= 1.0
        assert time.monotonic() < deadline, "featurization did not finish"
        time.sleep(0.1)


def test_an_uploaded_image_is_featurized_in_the_background(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    pixels, truth = two_regions()
    response = upload_image(client, project_id, admin_headers, pixels, truth)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["kind"] == "image" and created["status"] == "featurizing"
    assert created["ground_truth_classes"] == ["0", "1"]
    dataset = wait_ready(client, admin_headers, created["id"])
    assert dataset["status"] == "ready", dataset
    facts = dataset["featurization"]
    assert facts["progress"] == 1.0 and facts["shape"] == [48, 64]
    assert facts["superpixels"] is False and facts["version"] == 1
    assert dataset["n_items"] == 48 * 64 and dataset["n_features"] == 8
    assert "job" not in facts
    items = client.get(
        f"/api/v1/datasets/{created['id']}/items", params={"limit": 3}, headers=admin_headers
    ).json()
    assert items["total"] == 48 * 64 and len(items["items"][0]["values"]) == 8
    views = client.get(f"/api/v1/datasets/{created['id']}/views", headers=admin_headers).json()
    assert [v["name"] for v in views["items"]] == ["PCA"]


def test_featurize_again_with_another_recipe(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    pixels, _ = two_regions()
    dataset_id = upload_image(client, project_id, admin_headers, pixels).json()["id"]
    wait_ready(client, admin_headers, dataset_id)
    info = client.get("/api/v1/featurization", headers=admin_headers).json()
    assert "window" in info["recipe_schema"]["properties"]
    recipe = {
        **info["default_recipe"],
        "superpixels": "always",
        "n_segments": 40,
        "n_components": 4,
    }
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/featurize", json=recipe, headers=admin_headers
    )
    assert response.status_code == 202, response.text
    dataset = wait_ready(client, admin_headers, dataset_id)
    assert dataset["featurization"]["superpixels"] is True
    assert dataset["featurization"]["version"] == 2
    assert 10 <= dataset["n_items"] <= 100 and dataset["n_features"] == 4
    assert dataset["featurization"]["recipe"]["n_segments"] == 40


def test_bad_recipes_and_ground_truths_are_refused_and_write_nothing(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    pixels, truth = two_regions()
    dataset_id = upload_image(client, project_id, admin_headers, pixels).json()["id"]
    wait_ready(client, admin_headers, dataset_id)
    before = row_counts(session)
    url = f"/api/v1/datasets/{dataset_id}/featurize"
    for recipe, expected in [
        ({"window": 4}, "odd"),
        ({"sigmas": [-1.0]}, "greater than 0"),
        ({"unknown": 1}, "Extra inputs"),
        ({"filters": [], "window": 0}, "at least one filter"),
    ]:
        response = client.post(url, json=recipe, headers=admin_headers)
        assert response.status_code == 422, (recipe, response.text)
        assert expected in response.text, (recipe, response.text)
    small = truth[:10, :10].astype(np.uint8)
    bad_truth = upload_image(client, project_id, admin_headers, pixels, small)
    assert bad_truth.status_code == 422 and "ground_truth" in bad_truth.json()["detail"]
    assert row_counts(session) == before


def test_a_table_is_not_featurized(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    csv = b"a,b\n1,2\n3,4\n5,7\n"
    table = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("t.csv", csv, "text/csv")},
        headers=admin_headers,
    ).json()
    response = client.post(
        f"/api/v1/datasets/{table['id']}/featurize", json={}, headers=admin_headers
    )
    assert response.status_code == 422 and "only images" in response.json()["detail"]


def test_the_published_recipe_is_the_engines() -> None:
    """The API's recipe model and the engine's Recipe have the same fields and defaults."""
    from dataclasses import fields

    from app.engine.image.featurize import Recipe
    from app.jobs.featurize.recipe import RecipeParams

    assert set(RecipeParams.model_fields) == {f.name for f in fields(Recipe)}
    assert RecipeParams().recipe() == Recipe()


def test_the_smallest_image_upload_accepts_is_featurized(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    """2 x 2 pixels is the upload's lower limit (smaller gets 422, tests/api/test_bad_uploads.py)
    because it is the smallest featurization takes: what is accepted must featurize."""
    pixels = np.array([[[0, 0, 0], [255, 0, 0]], [[0, 255, 0], [0, 0, 255]]], dtype=np.uint8)
    response = upload_image(client, project_id, admin_headers, pixels, name="tiny")
    assert response.status_code == 201, response.text
    dataset = wait_ready(client, admin_headers, response.json()["id"])
    assert dataset["status"] == "ready", dataset
    assert dataset["n_items"] >= 1
