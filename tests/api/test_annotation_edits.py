"""Deleting any one annotation and editing one (rename a label, change a link's confidence):
each is one revision, nothing is lost, and undoing an edit brings the original back."""

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.models import Role
from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    return upload_npy(client, project_id, admin_headers, np.arange(20.0).reshape(10, 2))


def _url(dataset_id: int, suffix: str = "") -> str:
    return f"/api/v1/datasets/{dataset_id}/annotations{suffix}"


def _post(client: TestClient, dataset_id: int, headers: dict[str, str], **body: object) -> dict:  # type: ignore[type-arg]
    response = client.post(_url(dataset_id), json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _side(client: TestClient, dataset_id: int, headers: dict[str, str]) -> dict:  # type: ignore[type-arg]
    return client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=headers).json()  # type: ignore[no-any-return]


def test_delete_any_annotation(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    first = _post(client, dataset_id, admin_headers, kind="label", items=[0, 1], label="a")
    _post(client, dataset_id, admin_headers, kind="label", items=[5], label="b")
    deleted = client.delete(_url(dataset_id, f"/{first['id']}"), headers=admin_headers)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["revision"] == 3 and deleted.json()["annotation"]["deleted_at"]
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {"b": [5]}
    history = client.get(_url(dataset_id, "?include_deleted=true"), headers=admin_headers).json()
    assert history["total"] == 2  # nothing is lost
    again = client.delete(_url(dataset_id, f"/{first['id']}"), headers=admin_headers)
    assert again.status_code == 409 and "already deleted" in again.text
    assert client.delete(_url(dataset_id, "/999999"), headers=admin_headers).status_code == 404


def test_rename_a_label_and_undo_the_edit(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    label = _post(client, dataset_id, admin_headers, kind="label", items=[2, 3], label="cat")
    edited = client.patch(
        _url(dataset_id, f"/{label['id']}"), json={"label": "dog"}, headers=admin_headers
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["payload"] == {"items": [2, 3], "label": "dog", "replaces": label["id"]}
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {"dog": [2, 3]}
    assert _side(client, dataset_id, admin_headers)["revision"] == 2  # one act, one revision

    assert client.post(_url(dataset_id, "/undo"), headers=admin_headers).status_code == 200
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {"cat": [2, 3]}
    assert client.post(_url(dataset_id, "/redo"), headers=admin_headers).status_code == 200
    assert _side(client, dataset_id, admin_headers)["labeled_items"] == {"dog": [2, 3]}
    live = client.get(_url(dataset_id), headers=admin_headers).json()["items"]
    assert [a["id"] for a in live] == [edited.json()["id"]]


def test_change_a_links_confidence(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    link = _post(client, dataset_id, admin_headers, kind="must_link", items=[0, 1])
    edited = client.patch(
        _url(dataset_id, f"/{link['id']}"), json={"confidence": 0.8}, headers=admin_headers
    )
    assert edited.status_code == 200, edited.text
    assert _side(client, dataset_id, admin_headers)["must_link_confidence"] == [0.8]


@pytest.mark.parametrize(
    ("annotation", "edit", "status", "message"),
    [
        ({"kind": "must_link", "items": [0, 1]}, {"label": "x"}, 422, "has no label"),
        ({"kind": "label", "items": [0], "label": "a"}, {"confidence": 0.9}, 422, "confidence"),
        ({"kind": "label", "items": [0], "label": "a"}, {}, 422, "nothing to change"),
        ({"kind": "label", "items": [0], "label": "a"}, {"label": " "}, 422, "label"),
        ({"kind": "label", "items": [0], "label": "a"}, {"confidence": 0.2}, 422, "confidence"),
    ],
)
def test_bad_edits_write_nothing(
    client: TestClient,
    session: Session,
    dataset_id: int,
    admin_headers: dict[str, str],
    annotation: dict[str, object],
    edit: dict[str, object],
    status: int,
    message: str,
) -> None:
    created = _post(client, dataset_id, admin_headers, **annotation)
    before = row_counts(session)
    response = client.patch(_url(dataset_id, f"/{created['id']}"), json=edit, headers=admin_headers)
    assert response.status_code == status and message in response.text, response.text
    assert row_counts(session) == before
    assert _side(client, dataset_id, admin_headers)["revision"] == 1


def test_viewers_cannot_delete_or_edit(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], make_user, project_id: int
) -> None:  # type: ignore[no-untyped-def]
    label = _post(client, dataset_id, admin_headers, kind="label", items=[0], label="a")
    viewer = make_user("viewer1", project_id, Role.viewer)
    assert client.delete(_url(dataset_id, f"/{label['id']}"), headers=viewer).status_code == 403
    assert (
        client.patch(_url(dataset_id, f"/{label['id']}"), json={"label": "b"}, headers=viewer)
    ).status_code == 403
