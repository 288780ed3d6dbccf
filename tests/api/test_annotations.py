"""Annotations, views and compiled side information through the API."""

import io

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.models import Role
from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db

FEATURES = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 1.0], [8.0, 9.0], [9.0, 8.5], [10.0, 9.5]])


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    return upload_npy(client, project_id, admin_headers, FEATURES)


def post(client: TestClient, dataset_id: int, headers: dict[str, str], **body: object):  # type: ignore[no-untyped-def]
    return client.post(f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=headers)


def test_annotations_bump_the_revision_and_are_listed_with_author_and_time(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    first = post(client, dataset_id, admin_headers, kind="label", items=[2, 0, 0], label="low")
    assert first.status_code == 201, first.text
    assert first.json()["payload"] == {"items": [0, 2], "label": "low"}
    assert first.json()["revision"] == 1
    second = post(client, dataset_id, admin_headers, kind="must_link", items=[3, 4], confidence=0.9)
    assert second.json()["confidence"] == 0.9
    page = client.get(f"/api/v1/datasets/{dataset_id}/annotations", headers=admin_headers).json()
    assert page["total"] == 2 and page["revision"] == 2
    assert page["items"][0]["author_id"] is not None
    assert page["items"][0]["created_at"].endswith(("Z", "+00:00"))  # UTC, explicit
    dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=admin_headers).json()
    assert dataset["revision"] == 2


def test_bulk_labels_of_tens_of_thousands_of_items(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.random.default_rng(0).normal(size=(50_000, 2)))
    created = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("big.npy", buffer.getvalue(), "application/octet-stream")},
        headers=admin_headers,
    ).json()
    response = post(
        client,
        created["id"],
        admin_headers,
        kind="label",
        items=list(range(0, 50_000, 2)),
        label="even",
    )
    assert response.status_code == 201
    info = client.get(
        f"/api/v1/datasets/{created['id']}/side-information", headers=admin_headers
    ).json()
    assert info["n_labeled"] == 25_000


def test_undo_and_redo_work_by_soft_delete(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    a = post(client, dataset_id, admin_headers, kind="label", items=[0], label="A").json()
    b = post(client, dataset_id, admin_headers, kind="label", items=[1], label="B").json()
    undone = client.post(f"{url}/undo", headers=admin_headers).json()
    assert undone["annotation"]["id"] == b["id"]
    assert undone["annotation"]["deleted_at"] is not None
    assert undone["revision"] == 3
    live = client.get(url, headers=admin_headers).json()
    assert [x["id"] for x in live["items"]] == [a["id"]]
    everything = client.get(url, params={"include_deleted": True}, headers=admin_headers).json()
    assert everything["total"] == 2  # nothing is lost
    redone = client.post(f"{url}/redo", headers=admin_headers).json()
    assert redone["annotation"]["id"] == b["id"] and redone["annotation"]["deleted_at"] is None
    assert client.post(f"{url}/redo", headers=admin_headers).status_code == 409
    # Undo twice, then a new act: the redo stack is gone.
    client.post(f"{url}/undo", headers=admin_headers)
    client.post(f"{url}/undo", headers=admin_headers)
    post(client, dataset_id, admin_headers, kind="label", items=[2], label="C")
    response = client.post(f"{url}/redo", headers=admin_headers)
    assert response.status_code == 409
    assert response.json()["detail"] == "nothing to redo"
    client.post(f"{url}/undo", headers=admin_headers)
    assert client.post(f"{url}/undo", headers=admin_headers).status_code == 409


def test_side_information_compiles_labels_links_boundary_and_conflicts(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
    assert [v["method"] for v in views["items"]] == ["pca"]
    view = client.post(
        f"/api/v1/datasets/{dataset_id}/views", json={"x": "x0", "y": 1}, headers=admin_headers
    ).json()
    assert view["name"] == "x0 vs x1"
    post(client, dataset_id, admin_headers, kind="label", items=[0, 1], label="low")
    post(client, dataset_id, admin_headers, kind="label", items=[5], label="high")
    must = post(client, dataset_id, admin_headers, kind="must_link", items=[1, 2, 3]).json()
    cannot = post(
        client,
        dataset_id,
        admin_headers,
        kind="cannot_link",
        items_a=[0],
        items_b=[3, 4],
        confidence=0.75,
    ).json()
    post(
        client,
        dataset_id,
        admin_headers,
        kind="boundary",
        view_id=view["id"],
        points=[[0, 10], [10, 0]],
        labels=["lower-left", "upper-right"],
    )
    info = client.get(
        f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers
    ).json()
    assert info["revision"] == 5
    assert info["labeled_items"] == {"high": [5], "low": [0, 1]}
    assert info["chunklets"] == [[1, 2, 3]]
    assert info["must_link"] == [[1, 2], [2, 3]]
    assert info["cannot_link"] == [[0, 3], [0, 4]]
    assert info["cannot_link_confidence"] == [0.75, 0.75]
    assert info["boundary_labels"] == ["lower-left", "upper-right"]
    scores = np.array(info["side_scores"])
    # The line x + y = 10 drawn downwards: items near the origin are on its right side.
    assert (scores[:3] < 0).all() and (scores[3:] > 0).all()
    assert info["conflicts"] == []  # the cannot-link is soft, so it conflicts with nothing

    hard = post(client, dataset_id, admin_headers, kind="cannot_link", items_a=[1], items_b=[3])
    conflicts = client.get(
        f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers
    ).json()["conflicts"]
    assert [c["kind"] for c in conflicts] == ["must_link_in_cannot_link"]
    assert conflicts[0]["annotation_ids"] == [hard.json()["id"], must["id"]]
    assert cannot["id"] not in conflicts[0]["annotation_ids"]


BAD_ANNOTATIONS = {
    "item out of range": ({"kind": "label", "items": [0, 6], "label": "A"}, ["item 6", "0 to 5"]),
    "negative item": (
        {"kind": "must_link", "items": [-1, 2]},
        ["items.0", "greater than or equal to 0"],
    ),
    "must-link of one item": ({"kind": "must_link", "items": [3, 3]}, ["at least 2"]),
    "boundary of one point": (
        {"kind": "boundary", "view_id": 0, "points": [[0, 0]], "labels": ["a", "b"]},
        ["points"],
    ),
    "boundary in an unknown view": (
        {"kind": "boundary", "view_id": 999, "points": [[0, 0], [1, 1]], "labels": ["a", "b"]},
        ["no view with id 999"],
    ),
    "boundary with equal labels": (
        {"kind": "boundary", "view_id": None, "points": [[0, 0], [1, 1]], "labels": ["a", "a"]},
        ["two different"],
    ),
    "cannot-link overlapping sets": (
        {"kind": "cannot_link", "items_a": [1, 2], "items_b": [2]},
        ["item 2 is in both"],
    ),
    "confidence out of range": (
        {"kind": "must_link", "items": [1, 2], "confidence": 0.3},
        ["confidence"],
    ),
    "unknown kind": ({"kind": "lasso", "items": [1]}, ["kind"]),
    "empty label": ({"kind": "label", "items": [1], "label": ""}, ["label"]),
}


@pytest.mark.parametrize("case", BAD_ANNOTATIONS.values(), ids=BAD_ANNOTATIONS)
def test_bad_annotations_get_422_and_write_nothing(
    client: TestClient,
    dataset_id: int,
    admin_headers: dict[str, str],
    session: Session,
    case: tuple[dict[str, object], list[str]],
) -> None:
    body, words = case
    if body.get("view_id", 0) is None:
        views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
        body = {**body, "view_id": views["items"][0]["id"]}
    before = row_counts(session)
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=admin_headers
    )
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["detail"]
    assert row_counts(session) == before
    dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=admin_headers).json()
    assert dataset["revision"] == 0


def test_viewers_cannot_annotate_and_outsiders_see_404(
    client: TestClient, dataset_id: int, project_id: int, make_user
) -> None:
    viewer = make_user("viewer", project_id, Role.viewer)
    body = {"kind": "label", "items": [0], "label": "A"}
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    assert client.post(url, json=body, headers=viewer).status_code == 403
    assert client.post(f"{url}/undo", headers=viewer).status_code == 403
    assert client.get(url, headers=viewer).status_code == 200
    outsider = make_user("outsider")
    assert client.post(url, json=body, headers=outsider).status_code == 404
    side = f"/api/v1/datasets/{dataset_id}/side-information"
    assert client.get(side, headers=outsider).status_code == 404


def test_view_coordinates_download_in_binary(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    view = client.post(
        f"/api/v1/datasets/{dataset_id}/views", json={"x": 1, "y": 0}, headers=admin_headers
    ).json()
    url = f"/api/v1/datasets/{dataset_id}/views/{view['id']}/coordinates"
    raw = client.get(url, headers=admin_headers)
    assert raw.headers["x-items"] == "6"
    coords = np.frombuffer(raw.content, dtype="<f4").reshape(-1, 2)
    np.testing.assert_allclose(coords, FEATURES[:, [1, 0]])
    npy = client.get(url, params={"format": "npy"}, headers=admin_headers)
    np.testing.assert_allclose(np.load(io.BytesIO(npy.content)), FEATURES[:, [1, 0]])
    pca = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
    pca_coords = client.get(
        f"/api/v1/datasets/{dataset_id}/views/{pca['items'][0]['id']}/coordinates",
        params={"format": "npy"},
        headers=admin_headers,
    )
    from sklearn.decomposition import PCA

    expected = PCA(2).fit_transform(FEATURES)
    got = np.load(io.BytesIO(pca_coords.content))
    np.testing.assert_allclose(np.abs(got), np.abs(expected), rtol=1e-4, atol=1e-4)
    bad = client.post(
        f"/api/v1/datasets/{dataset_id}/views", json={"x": "nope", "y": 0}, headers=admin_headers
    )
    assert bad.status_code == 422 and "'nope'" in bad.json()["detail"]
