"""GET /datasets/{id}/suggestions: questions from the latest finished run, never one the expert
has already answered, the same for the same run and annotations, 409 without a run."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs

from app.engine.active import knowledge, suggest_pairs
from tests.api.test_runs import run_to_end, upload_csv

pytestmark = pytest.mark.db


@pytest.fixture
def blobs(client: TestClient, project_id: int, admin_headers: dict[str, str]):  # type: ignore[no-untyped-def]
    x, y = make_blobs(90, centers=3, cluster_std=1.6, random_state=3)
    return upload_csv(client, project_id, admin_headers, x, y, "blobs"), x


def _suggestions(client: TestClient, headers: dict[str, str], dataset_id: int, **query: object):  # type: ignore[no-untyped-def]
    return client.get(f"/api/v1/datasets/{dataset_id}/suggestions", params=query, headers=headers)


def test_no_run_to_reason_from_is_a_conflict(
    client: TestClient, admin_headers: dict[str, str], blobs: tuple[int, np.ndarray]
) -> None:
    response = _suggestions(client, admin_headers, blobs[0])
    assert response.status_code == 409
    assert "no finished run to reason from" in response.text


def test_pairs_follow_the_engine_rule_and_skip_answered_questions(
    client: TestClient, admin_headers: dict[str, str], blobs: tuple[int, np.ndarray]
) -> None:
    dataset_id, x = blobs
    run = run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=3)
    assert run["status"] == "succeeded", run
    first = _suggestions(client, admin_headers, dataset_id, kind="pairs", n=5)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["run_id"] == run["id"] and body["stale"] is False
    labels = np.array(
        client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()["labels"]
    )
    # The stored features are the uploaded ones: the engine's rule on them gives the same list.
    expected = suggest_pairs(x, labels, 5, knowledge(len(x)))
    assert [tuple(q["items"]) for q in body["items"]] == [q.items for q in expected]
    assert all(q["kind"] == "pair" and q["reason"] for q in body["items"])
    assert _suggestions(client, admin_headers, dataset_id, kind="pairs", n=5).json() == body

    # Answer the first question "different": it is never asked again and the run is now stale.
    i, j = body["items"][0]["items"]
    answer = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "cannot_link", "items_a": [i], "items_b": [j]},
        headers=admin_headers,
    )
    assert answer.status_code == 201, answer.text
    after = _suggestions(client, admin_headers, dataset_id, kind="pairs", n=20).json()
    assert after["stale"] is True and after["revision"] == answer.json()["revision"]
    assert all(set(q["items"]) != {i, j} for q in after["items"])


def test_items_skip_labeled_ones(
    client: TestClient, admin_headers: dict[str, str], blobs: tuple[int, np.ndarray]
) -> None:
    dataset_id, _ = blobs
    run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=3)
    top = _suggestions(client, admin_headers, dataset_id, kind="items", n=3).json()["items"]
    assert [q["kind"] for q in top] == ["item"] * 3
    labeled = top[0]["items"][0]
    client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [labeled], "label": "a"},
        headers=admin_headers,
    )
    again = _suggestions(client, admin_headers, dataset_id, kind="items", n=3).json()["items"]
    assert labeled not in [q["items"][0] for q in again]
    assert again[0]["items"] == top[1]["items"]


@pytest.mark.parametrize(
    ("query", "status"),
    [({"n": 0}, 422), ({"n": 101}, 422), ({"kind": "triples"}, 422), ({"run_id": 999999}, 404)],
)
def test_bad_queries(
    client: TestClient,
    admin_headers: dict[str, str],
    blobs: tuple[int, np.ndarray],
    query: dict[str, object],
    status: int,
) -> None:
    run_to_end(client, admin_headers, blobs[0], "cec", n_clusters=3)
    assert _suggestions(client, admin_headers, blobs[0], **query).status_code == status
