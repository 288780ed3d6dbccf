"""Many annotations in one request (`POST .../annotations/batch`): checked like single ones, all
before any is stored (a refusal names the bad one's index and stores nothing), recorded as one
act under one revision, so one undo takes the whole batch back and one redo restores it."""

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.models import Role
from app.services.annotations import MAX_BATCH
from tests.conftest import row_counts

pytestmark = pytest.mark.db

N_ITEMS = 40
# Ids in the reverse order of the rows, so an id never names the item at its own position.
IDS = [f"cell-{N_ITEMS - 1 - k}" for k in range(N_ITEMS)]


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    rows = [f"{item_id},{k % 7},{(k * 3) % 5}" for k, item_id in enumerate(IDS)]
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("cells.csv", "\n".join(["key,a,b", *rows]).encode(), "text/csv")},
        data={"id_column": "key"},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _url(dataset_id: int, suffix: str = "") -> str:
    return f"/api/v1/datasets/{dataset_id}/annotations{suffix}"


def _batch(client: TestClient, dataset_id: int, headers: dict[str, str], *bodies: object):  # type: ignore[no-untyped-def]
    return client.post(_url(dataset_id, "/batch"), json={"annotations": bodies}, headers=headers)


def _page(client: TestClient, dataset_id: int, headers: dict[str, str]) -> dict[str, Any]:
    response = client.get(_url(dataset_id), headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _side(client: TestClient, dataset_id: int, headers: dict[str, str]) -> dict[str, Any]:
    url = f"/api/v1/datasets/{dataset_id}/side-information"
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _pca_view(client: TestClient, dataset_id: int, headers: dict[str, str]) -> int:
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=headers).json()
    return int(views["items"][0]["id"])


def test_a_batch_of_every_kind_is_stored_under_one_revision_in_the_order_sent(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    view_id = _pca_view(client, dataset_id, admin_headers)
    bodies: list[dict[str, Any]] = [
        {"kind": "must_link", "items": [4, 3], "confidence": 0.9},
        {"kind": "label", "items": [2, 0, 0], "label": "low"},
        {"kind": "cannot_link", "items_a": [0], "items_b": [9, 8]},
        {"kind": "label", "item_ids": ["cell-0", "cell-39"], "label": "ends"},
        {"kind": "boundary", "view_id": view_id, "points": [[0, -9], [0, 9]], "labels": ["L", "R"]},
        {"kind": "cannot_link", "item_ids_a": ["cell-30"], "item_ids_b": ["cell-20"]},
    ]
    response = _batch(client, dataset_id, admin_headers, *bodies)
    assert response.status_code == 201, response.text
    created = response.json()
    assert set(created) == {"ids", "revision", "count"}  # never an echo of the payloads
    assert created["revision"] == 1 and created["count"] == len(bodies)
    assert created["ids"] == sorted(created["ids"]) and len(set(created["ids"])) == len(bodies)

    page = _page(client, dataset_id, admin_headers)
    assert page["revision"] == 1 and page["total"] == len(bodies) and page["can_undo"]
    stored = {a["id"]: a for a in page["items"]}
    assert [stored[i]["kind"] for i in created["ids"]] == [b["kind"] for b in bodies]
    assert {a["revision"] for a in page["items"]} == {1}
    payloads = [stored[i]["payload"] for i in created["ids"]]
    assert payloads[0] == {"items": [3, 4]} and stored[created["ids"][0]]["confidence"] == 0.9
    assert payloads[1] == {"items": [0, 2], "label": "low"}
    assert payloads[2] == {"items_a": [0], "items_b": [8, 9]}
    assert payloads[3] == {"items": [0, 39], "label": "ends"}  # ids stored as row positions
    assert payloads[4]["labels"] == ["L", "R"] and payloads[4]["view_id"] == view_id
    assert payloads[5] == {"items_a": [9], "items_b": [19]}
    dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=admin_headers).json()
    assert dataset["revision"] == 1


def test_one_undo_takes_the_whole_batch_back_and_one_redo_restores_it(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    single = client.post(
        _url(dataset_id), json={"kind": "label", "items": [0], "label": "a"}, headers=admin_headers
    ).json()
    links = [{"kind": "must_link", "items": [k, k + 1]} for k in range(10, 20, 2)]
    batch = _batch(client, dataset_id, admin_headers, *links).json()
    assert batch["revision"] == 2

    undone = client.post(_url(dataset_id, "/undo"), headers=admin_headers)
    assert undone.status_code == 200, undone.text
    assert undone.json()["count"] == len(links) and undone.json()["revision"] == 3
    assert undone.json()["annotation"]["id"] == batch["ids"][-1]
    page = _page(client, dataset_id, admin_headers)
    assert [a["id"] for a in page["items"]] == [single["id"]]
    assert page["revision"] == 3 and page["can_redo"]
    assert _side(client, dataset_id, admin_headers)["chunklets"] == []

    redone = client.post(_url(dataset_id, "/redo"), headers=admin_headers)
    assert redone.status_code == 200, redone.text
    assert redone.json()["count"] == len(links) and redone.json()["revision"] == 4
    page = _page(client, dataset_id, admin_headers)
    assert [a["id"] for a in page["items"]] == [single["id"], *batch["ids"]]
    assert page["revision"] == 4 and not page["can_redo"]
    assert len(_side(client, dataset_id, admin_headers)["chunklets"]) == len(links)

    # Undo the batch, then the single annotation: two acts, two undos; redo brings back the
    # single one alone, then the batch whole.
    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).json()["count"] == 5
    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).json()["count"] == 1
    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).status_code == 409
    assert client.post(_url(dataset_id, "/redo"), headers=admin_headers).json()["count"] == 1
    assert [a["id"] for a in _page(client, dataset_id, admin_headers)["items"]] == [single["id"]]
    # A new batch is a new act: the undone batch can no longer be redone.
    _batch(client, dataset_id, admin_headers, {"kind": "label", "items": [1], "label": "b"})
    assert client.post(_url(dataset_id, "/redo"), headers=admin_headers).status_code == 409


def test_deleting_or_editing_one_annotation_of_a_batch_leaves_the_rest_one_act(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    bodies = [{"kind": "label", "items": [k], "label": f"l{k}"} for k in range(4)]
    ids = _batch(client, dataset_id, admin_headers, *bodies).json()["ids"]
    deleted = client.delete(_url(dataset_id, f"/{ids[1]}"), headers=admin_headers)
    assert deleted.status_code == 200 and deleted.json()["count"] == 1
    edited = client.patch(
        _url(dataset_id, f"/{ids[2]}"), json={"label": "x"}, headers=admin_headers
    )
    assert edited.status_code == 200, edited.text
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {
        "l0": [0],
        "x": [2],
        "l3": [3],
    }

    # The edit is undone alone (its original comes back), then the batch: what is left of it.
    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).json()["count"] == 1
    live = [a["id"] for a in _page(client, dataset_id, admin_headers)["items"]]
    assert live == [ids[0], ids[2], ids[3]]
    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).json()["count"] == 3
    assert _page(client, dataset_id, admin_headers)["items"] == []
    assert client.post(_url(dataset_id, "/redo"), headers=admin_headers).json()["count"] == 3
    live = [a["id"] for a in _page(client, dataset_id, admin_headers)["items"]]
    assert live == [ids[0], ids[2], ids[3]]  # the deleted one stays deleted
    assert client.post(_url(dataset_id, "/redo"), headers=admin_headers).json()["count"] == 1
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {
        "l0": [0],
        "x": [2],
        "l3": [3],
    }


GOOD = {"kind": "must_link", "items": [1, 2]}
BY_ID = {"kind": "label", "item_ids": ["cell-5"], "label": "a"}
BAD_BATCHES: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "item out of range": (
        [GOOD, GOOD, {"kind": "label", "items": [0, 40], "label": "A"}, GOOD],
        ["annotations[2]: items has item 40 out of range", "0 to 39"],
    ),
    "must-link of one item": (
        [GOOD, {"kind": "must_link", "items": [3, 3]}],
        ["annotations[1]: a must-link needs at least 2 distinct items"],
    ),
    "cannot-link overlapping sets": (
        [{"kind": "cannot_link", "items_a": [1, 2], "items_b": [2]}, GOOD],
        ["annotations[0]: item 2 is in both"],
    ),
    "boundary in an unknown view": (
        [
            GOOD,
            {"kind": "boundary", "view_id": 999, "points": [[0, 0], [1, 1]], "labels": ["a", "b"]},
        ],
        ["annotations[1]:", "no view with id 999"],
    ),
    "unknown item id among many by id": (
        [BY_ID, GOOD, BY_ID, BY_ID, {**BY_ID, "item_ids": ["cell-1", "nope"]}, BY_ID, BY_ID],
        ["annotations[4]: item_ids: dataset", "no item with id 'nope'"],
    ),
    "the first of two bad ones is named": (
        [GOOD, {"kind": "label", "items": [99], "label": "A"}, {**BY_ID, "item_ids": ["nope"]}],
        ["annotations[1]: items has item 99"],
    ),
    "schema: negative item": (
        [GOOD, GOOD, GOOD, {"kind": "must_link", "items": [-1, 2]}],
        ["annotations.3", "greater than or equal to 0"],
    ),
    "schema: unknown kind": ([GOOD, {"kind": "lasso", "items": [1]}], ["annotations.1"]),
}


@pytest.mark.parametrize("case", BAD_BATCHES.values(), ids=BAD_BATCHES)
def test_one_bad_annotation_refuses_the_batch_naming_it_and_stores_nothing(
    client: TestClient,
    dataset_id: int,
    admin_headers: dict[str, str],
    session: Session,
    case: tuple[list[dict[str, Any]], list[str]],
) -> None:
    bodies, words = case
    before = row_counts(session)
    response = _batch(client, dataset_id, admin_headers, *bodies)
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["detail"]
    assert row_counts(session) == before
    assert _page(client, dataset_id, admin_headers)["revision"] == 0


def test_a_batch_takes_1_to_the_limit(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    before = row_counts(session)
    too_many = [{"kind": "label", "items": [0], "label": "a"}] * (MAX_BATCH + 1)
    response = _batch(client, dataset_id, admin_headers, *too_many)
    assert response.status_code == 422, response.text
    assert "at most 100,000 annotations, not 100,001" in response.json()["detail"]
    empty = _batch(client, dataset_id, admin_headers)
    assert empty.status_code == 422 and "annotations" in empty.json()["detail"]
    assert row_counts(session) == before


def test_viewers_cannot_send_a_batch_and_unknown_datasets_are_404(
    client: TestClient, dataset_id: int, project_id: int, admin_headers: dict[str, str], make_user
) -> None:
    body = {"annotations": [{"kind": "label", "items": [0], "label": "A"}]}
    viewer = make_user("viewer", project_id, Role.viewer)
    assert client.post(_url(dataset_id, "/batch"), json=body, headers=viewer).status_code == 403
    outsider = make_user("outsider")
    assert client.post(_url(dataset_id, "/batch"), json=body, headers=outsider).status_code == 404
    unknown = client.post(_url(999_999, "/batch"), json=body, headers=admin_headers)
    assert unknown.status_code == 404
    assert _page(client, dataset_id, admin_headers)["revision"] == 0


def test_side_information_after_a_batch_of_must_links_holds_them(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    pairs = [[k, k + 1] for k in range(0, 30, 3)]  # 0-1, 3-4, ..., 27-28
    links = [{"kind": "must_link", "items": pair} for pair in pairs]
    chained = {"kind": "must_link", "item_ids": ["cell-38", "cell-37"]}  # items 1 and 2
    created = _batch(client, dataset_id, admin_headers, *links, chained).json()
    side = _side(client, dataset_id, admin_headers)
    assert side["revision"] == created["revision"]
    assert sorted(side["must_link"]) == [[0, 1], [1, 2], *pairs[1:]]
    assert sorted(side["chunklets"]) == [[0, 1, 2], *pairs[1:]]
    assert side["conflicts"] == []
    client.post(_url(dataset_id, "/undo"), headers=admin_headers)
    assert _side(client, dataset_id, admin_headers)["must_link"] == []
