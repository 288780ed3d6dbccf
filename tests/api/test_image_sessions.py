"""An image segmentation session over REST: scribble, run, read the mask, apply the model to
another image; scribbles validated against the image."""

import io

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy.orm import Session

from tests.api.test_image_featurization import two_regions, upload_image
from tests.api.test_runs import run_succeeded, wait
from tests.conftest import post_dataset, row_counts

pytestmark = pytest.mark.db

HEIGHT, WIDTH = 96, 128
# Mild noise: these tests follow the REST path; how well methods segment hard images is
# measured by benchmarks/bench_image.py.
NOISE = 12.0


def scribble(label: str, points: list[list[float]], radius: float = 2.0) -> dict:  # type: ignore[type-arg]
    return {"kind": "scribble", "label": label, "strokes": [{"points": points, "radius": radius}]}


@pytest.mark.parametrize("algorithm", ["cec-ib", "ppc", "c4s"])
def test_scribble_run_and_read_the_mask(
    client: TestClient, admin_headers: dict[str, str], image_id: int, algorithm: str
) -> None:
    side = client.get(f"/api/v1/datasets/{image_id}/side-information", headers=admin_headers)
    assert side.status_code == 200, side.text
    assert sorted(side.json()["label_names"]) == ["background", "disc"]
    assert side.json()["n_labeled"] > 40
    run = run_succeeded(client, admin_headers, image_id, algorithm)
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()
    assert result["n_items"] == HEIGHT * WIDTH
    assert set(result["cluster_labels"]) >= {"disc", "background"}
    assert result["metrics"]["mean_iou"] > 0.8, result["metrics"]
    png = client.get(
        f"/api/v1/runs/{run['id']}/result", headers={**admin_headers, "Accept": "image/png"}
    )
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    mask = np.asarray(Image.open(io.BytesIO(png.content)))
    assert mask.shape == (HEIGHT, WIDTH)
    assert np.array_equal(mask.ravel(), np.asarray(result["labels"]))
    features = client.get(f"/api/v1/datasets/{image_id}/features", headers=admin_headers)
    assert features.status_code == 200
    assert np.load(io.BytesIO(features.content)).shape == (HEIGHT * WIDTH, 8)


def test_apply_a_run_to_another_image(
    client: TestClient, project_id: int, admin_headers: dict[str, str], image_id: int
) -> None:
    response = client.post(
        "/api/v1/runs",
        json={"dataset_id": image_id, "algorithm": "cec-ib", "params": {}},
        headers=admin_headers,
    )
    source = wait(client, admin_headers, response.json()["id"])
    source_result = client.get(f"/api/v1/runs/{source['id']}/result", headers=admin_headers)
    names = source_result.json()["cluster_labels"]
    pixels, truth = two_regions(HEIGHT, WIDTH, seed=7, noise=NOISE)
    other = upload_image(client, project_id, admin_headers, pixels, truth, name="second").json()
    applied = client.post(
        f"/api/v1/runs/{source['id']}/apply",
        json={"dataset_id": other["id"]},
        headers=admin_headers,
    )
    assert applied.status_code == 202, applied.text
    assert applied.json()["source_run_id"] == source["id"]
    run = wait(client, admin_headers, applied.json()["id"])
    assert run["status"] == "succeeded", run
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()
    assert result["metrics"]["mean_iou"] > 0.8
    assert result["cluster_labels"] == names  # the model's clusters keep their labels
    # The CEC family applies its pooled covariance (app/engine/image/pooled_apply.py): no
    # choice between fits is made, so none is reported.
    assert "choice" not in result["metrics"]
    labels = np.asarray(result["labels"]).reshape(HEIGHT, WIDTH)
    # The same cluster ids mean the same thing: the disc's centre gets the source's disc cluster.
    assert names[labels[48, 42]] == "disc" and names[labels[4, 120]] == "background"


def test_bad_scribbles_are_refused_and_write_nothing(
    client: TestClient, admin_headers: dict[str, str], image_id: int, session: Session
) -> None:
    url = f"/api/v1/datasets/{image_id}/annotations"
    before = row_counts(session)
    cases = [
        (scribble("x", [[10, 10], [130, 10]]), "outside"),
        (scribble("x", [[10, 10]], radius=0), "greater than 0"),
        ({"kind": "scribble", "strokes": [{"points": [[1, 1]], "radius": 1}]}, "label"),
        ({**scribble("x", [[1, 1]]), "erase": True}, "label"),
        ({"kind": "must_link", "items": [1, 2], "strokes": []}, ""),
    ]
    for body, expected in cases:
        response = client.post(url, json=body, headers=admin_headers)
        assert response.status_code == 422, (body, response.text)
        assert expected in response.text, (body, response.text)
    assert row_counts(session) == before


def test_a_scribble_on_a_table_is_refused(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    csv = b"a,b\n1,2\n3,4\n5,7\n"
    table = post_dataset(client, project_id, admin_headers, "t.csv", csv, "text/csv").json()
    response = client.post(
        f"/api/v1/datasets/{table['id']}/annotations",
        json=scribble("x", [[0, 0]]),
        headers=admin_headers,
    )
    assert response.status_code == 422 and "table" in response.json()["detail"]


def test_erase_and_stroke_links(
    client: TestClient, admin_headers: dict[str, str], image_id: int
) -> None:
    url = f"/api/v1/datasets/{image_id}/annotations"
    side = f"/api/v1/datasets/{image_id}/side-information"
    labeled = client.get(side, headers=admin_headers).json()["n_labeled"]
    erase = {"kind": "scribble", "erase": True, "strokes": [{"points": [[100, 10]], "radius": 3}]}
    assert client.post(url, json=erase, headers=admin_headers).status_code == 201
    assert client.get(side, headers=admin_headers).json()["n_labeled"] < labeled
    assert client.post(f"{url}/undo", headers=admin_headers).status_code == 200
    assert client.get(side, headers=admin_headers).json()["n_labeled"] == labeled
    link = {
        "kind": "cannot_link",
        "strokes_a": [{"points": [[42, 40]], "radius": 1}],
        "strokes_b": [{"points": [[120, 90]], "radius": 1}],
    }
    assert client.post(url, json=link, headers=admin_headers).status_code == 201
    pairs = client.get(side, headers=admin_headers).json()["cannot_link"]
    assert len(pairs) == 5 * 5  # a radius-1 disc covers 5 pixels


def test_painting_over_a_label_corrects_it(
    client: TestClient, admin_headers: dict[str, str], image_id: int
) -> None:
    """A later scribble wins where it overlaps an earlier one, without a conflict."""
    url = f"/api/v1/datasets/{image_id}/annotations"
    over = scribble("disc", [[100, 10], [110, 30]])  # over the background scribble
    assert client.post(url, json=over, headers=admin_headers).status_code == 201
    side = client.get(f"/api/v1/datasets/{image_id}/side-information", headers=admin_headers)
    assert side.json()["conflicts"] == []
    labeled = side.json()["labeled_items"]
    corner = 10 * WIDTH + 100  # pixel (x, y) = (100, 10), under both scribbles
    assert corner in labeled["disc"] and corner not in labeled["background"]
    response = client.post(
        "/api/v1/runs",
        json={"dataset_id": image_id, "algorithm": "ppc", "params": {}},
        headers=admin_headers,
    )
    assert response.status_code == 202, response.text
