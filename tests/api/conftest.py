"""Datasets the API tests share, uploaded to the test's project: the iris table, and a
two-region image scribbled with both its classes."""

import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import load_iris

from tests.api.test_image_featurization import two_regions, upload_image, wait_ready
from tests.api.test_image_sessions import HEIGHT, NOISE, WIDTH, scribble
from tests.api.test_runs import upload_csv


@pytest.fixture
def iris_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    iris = load_iris()
    return upload_csv(client, project_id, admin_headers, iris.data, iris.target, "iris")


@pytest.fixture
def image_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    pixels, truth = two_regions(HEIGHT, WIDTH, noise=NOISE)
    created = upload_image(client, project_id, admin_headers, pixels, truth).json()
    wait_ready(client, admin_headers, created["id"])
    url = f"/api/v1/datasets/{created['id']}/annotations"
    # The disc is centred at (x, y) = (42.7, 48) with radius 32; the background is the rest.
    for body in (
        scribble("disc", [[30, 48], [56, 48]]),
        scribble("background", [[100, 10], [120, 80]]),
    ):
        response = client.post(url, json=body, headers=admin_headers)
        assert response.status_code == 201, response.text
    return int(created["id"])
