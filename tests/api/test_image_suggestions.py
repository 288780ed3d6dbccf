"""Questions on an image: each suggested item comes with its region, and an answer drawn as
strokes on the anchors becomes exactly the asked relation between the asked items."""

import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs

from tests.api.test_image_sessions import HEIGHT, WIDTH
from tests.api.test_runs import upload_csv, wait

pytestmark = pytest.mark.db


def _questions(client: TestClient, headers: dict[str, str], dataset_id: int, kind: str, n: int):  # type: ignore[no-untyped-def]
    """The questions after a PPC run with its defaults."""
    response = client.post(
        "/api/v1/runs", json={"dataset_id": dataset_id, "algorithm": "ppc"}, headers=headers
    )
    assert response.status_code == 202, response.text
    assert wait(client, headers, response.json()["id"])["status"] == "succeeded"
    url = f"/api/v1/datasets/{dataset_id}/suggestions"
    return client.get(url, params={"kind": kind, "n": n}, headers=headers).json()["items"]


def _stroke(region: dict) -> dict:  # type: ignore[type-arg]
    return {"points": [region["anchor"]], "radius": region["answer_radius"]}


def test_pair_questions_on_an_image_carry_regions_and_answers_hit_the_items(
    client: TestClient, admin_headers: dict[str, str], image_id: int
) -> None:
    questions = _questions(client, admin_headers, image_id, "pairs", 3)
    assert questions
    for question in questions:
        assert len(question["regions"]) == 2
        for item, region in zip(question["items"], question["regions"], strict=True):
            x, y = item % WIDTH, item // WIDTH  # pixel items, row-major
            assert region["anchor"] == [x, y]
            assert region["bbox"] == [x, y, x, y]
            assert 0 <= x < WIDTH and 0 <= y < HEIGHT
    first = questions[0]
    a, b = first["regions"]
    answer = {"kind": "cannot_link", "strokes_a": [_stroke(a)], "strokes_b": [_stroke(b)]}
    url = f"/api/v1/datasets/{image_id}/annotations"
    assert client.post(url, json=answer, headers=admin_headers).status_code == 201
    side = client.get(f"/api/v1/datasets/{image_id}/side-information", headers=admin_headers)
    assert [sorted(pair) for pair in side.json()["cannot_link"]] == [sorted(first["items"])]


def test_item_questions_on_an_image_are_labelled_by_a_scribble_on_the_anchor(
    client: TestClient, admin_headers: dict[str, str], image_id: int
) -> None:
    (question,) = _questions(client, admin_headers, image_id, "items", 1)
    (region,) = question["regions"]
    body = {"kind": "scribble", "label": "disc", "strokes": [_stroke(region)]}
    url = f"/api/v1/datasets/{image_id}/annotations"
    assert client.post(url, json=body, headers=admin_headers).status_code == 201
    side = client.get(f"/api/v1/datasets/{image_id}/side-information", headers=admin_headers)
    assert question["items"][0] in side.json()["labeled_items"]["disc"]


def test_table_questions_have_no_regions(
    client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    x, y = make_blobs(60, centers=3, random_state=0)
    dataset_id = upload_csv(client, project_id, admin_headers, x, y, "blobs")
    response = client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset_id, "algorithm": "cec", "params": {"n_clusters": 3}},
        headers=admin_headers,
    )
    assert wait(client, admin_headers, response.json()["id"])["status"] == "succeeded"
    page = client.get(f"/api/v1/datasets/{dataset_id}/suggestions", headers=admin_headers).json()
    assert page["items"] and all(q["regions"] is None for q in page["items"])
