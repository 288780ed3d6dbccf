"""Roles in a project: viewer < editor < owner. Each role gets 403 on what it may not do, and
non-members get 404 (the project is not theirs to know about)."""

import io

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.db.models import Role
from tests.conftest import post_dataset

pytestmark = pytest.mark.db


def _npy(rows: int = 5) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(rows * 2, dtype=np.float64).reshape(rows, 2))
    return buffer.getvalue()


def _upload(client: TestClient, project_id: int, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    return post_dataset(client, project_id, headers, "x.npy", _npy())


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    response = _upload(client, project_id, admin_headers)
    assert response.status_code == 201
    return int(response.json()["id"])


ACTIONS = {
    "read project": lambda c, p, d, h: c.get(f"/api/v1/projects/{p}", headers=h),
    "list datasets": lambda c, p, d, h: c.get(f"/api/v1/projects/{p}/datasets", headers=h),
    "read dataset": lambda c, p, d, h: c.get(f"/api/v1/datasets/{d}", headers=h),
    "read items": lambda c, p, d, h: c.get(f"/api/v1/datasets/{d}/items", headers=h),
    "download features": lambda c, p, d, h: c.get(f"/api/v1/datasets/{d}/features", headers=h),
    "list members": lambda c, p, d, h: c.get(f"/api/v1/projects/{p}/members", headers=h),
    "upload dataset": lambda c, p, d, h: _upload(c, p, h),
    "add member": lambda c, p, d, h: c.put(
        f"/api/v1/projects/{p}/members", json={"username": "admin", "role": "owner"}, headers=h
    ),
    "delete dataset": lambda c, p, d, h: c.delete(f"/api/v1/datasets/{d}", headers=h),
    "delete project": lambda c, p, d, h: c.delete(f"/api/v1/projects/{p}", headers=h),
}
MINIMUM = {
    "read project": Role.viewer,
    "list datasets": Role.viewer,
    "read dataset": Role.viewer,
    "read items": Role.viewer,
    "download features": Role.viewer,
    "list members": Role.viewer,
    "upload dataset": Role.editor,
    "add member": Role.owner,
    "delete dataset": Role.owner,
    "delete project": Role.owner,
}


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("action", list(ACTIONS))
def test_each_role_may_do_exactly_what_its_rank_allows(
    client: TestClient, project_id: int, dataset_id: int, make_user, role: Role, action: str
) -> None:
    headers = make_user(f"user-{role.value}", project_id, role)
    response = ACTIONS[action](client, project_id, dataset_id, headers)
    if role.allows(MINIMUM[action]):
        assert response.status_code in (200, 201, 204), response.text
    else:
        assert response.status_code == 403, response.text
        body = response.json()
        assert body["code"] == "forbidden"
        assert role.value in body["detail"]


@pytest.mark.parametrize("action", list(ACTIONS))
def test_non_members_see_404(
    client: TestClient, project_id: int, dataset_id: int, make_user, action: str
) -> None:
    headers = make_user("outsider")
    response = ACTIONS[action](client, project_id, dataset_id, headers)
    assert response.status_code == 404


def test_projects_list_shows_only_the_users_projects(
    client: TestClient, project_id: int, make_user
) -> None:
    headers = make_user("member", project_id, Role.viewer)
    mine = client.post("/api/v1/projects", json={"name": "Mine"}, headers=headers).json()
    listed = client.get("/api/v1/projects", headers=headers).json()
    assert {p["id"] for p in listed["items"]} == {project_id, mine["id"]}
    assert listed["total"] == 2
    outsider = make_user("outsider")
    assert client.get("/api/v1/projects", headers=outsider).json()["total"] == 0


def test_the_last_owner_cannot_be_demoted(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    response = client.put(
        f"/api/v1/projects/{project_id}/members",
        json={"username": "admin", "role": "viewer"},
        headers=admin_headers,
    )
    assert response.status_code == 409
    assert "at least one owner" in response.json()["detail"]


def test_owner_adds_and_removes_members(
    client: TestClient, project_id: int, admin_headers: dict[str, str], make_user
) -> None:
    headers = make_user("bob")
    url = f"/api/v1/projects/{project_id}/members"
    added = client.put(url, json={"username": "bob", "role": "editor"}, headers=admin_headers)
    assert added.status_code == 200
    assert _upload(client, project_id, headers).status_code == 201
    assert client.delete(f"{url}/bob", headers=admin_headers).status_code == 204
    assert client.get(f"/api/v1/projects/{project_id}", headers=headers).status_code == 404
    unknown = client.put(url, json={"username": "ghost", "role": "viewer"}, headers=admin_headers)
    assert unknown.status_code == 404
