"""The API says what it allows: a 405 names the allowed methods in `Allow`, and names the server
would trim to nothing (project, dataset, token, user names, labels) are refused by the schema,
which publishes the same rule, with a message that says why."""

import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db

BLANKS = ["   ", "\t\n", "\u3000", " \x1f "]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/v1/projects", "GET, POST"),
        ("PATCH", "/api/v1/projects/1", "DELETE, GET"),
        ("POST", "/api/v1/projects/1/members", "GET, PUT"),
        ("POST", "/api/v1/health", "GET"),
        ("GET", "/api/v1/runs", "POST"),
        ("DELETE", "/api/v1/datasets/1/annotations", "GET, POST"),
        ("GET", "/api/v1/datasets/1/annotations/undo", "POST"),
        ("POST", "/static/css/app.css", "GET, HEAD"),
    ],
)
def test_405_lists_every_method_the_path_allows(
    client: TestClient, admin_headers: dict[str, str], method: str, path: str, allowed: str
) -> None:
    response = client.request(method, path, headers=admin_headers)
    assert response.status_code == 405, response.text
    assert response.headers["Allow"] == allowed
    assert response.json()["code"] == "method_not_allowed"


def test_every_405_allow_header_matches_the_published_paths(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """For each API path, a method it does not serve gets 405 listing exactly what the OpenAPI
    says it serves."""
    paths = client.get("/openapi.json").json()["paths"]
    for template, operations in paths.items():
        path = re.sub(r"\{[^}]+\}", "1", template)
        published = {m.upper() for m in operations}
        unused = sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - published)[0]
        response = client.request(unused, path, headers=admin_headers)
        assert response.status_code == 405, (unused, path)
        assert set(response.headers["Allow"].split(", ")) == published, path


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    return upload_npy(client, project_id, admin_headers, np.arange(8.0).reshape(4, 2))


def _blank_requests(project_id: int, dataset_id: int, blank: str) -> list[tuple[str, str, dict]]:  # type: ignore[type-arg]
    annotations = f"/api/v1/datasets/{dataset_id}/annotations"
    return [
        ("POST", "/api/v1/projects", {"json": {"name": blank}}),
        ("POST", "/api/v1/tokens", {"json": {"name": blank}}),
        ("POST", "/api/v1/users", {"json": {"username": blank, "password": "long enough"}}),
        (
            "PUT",
            f"/api/v1/projects/{project_id}/members",
            {"json": {"username": blank, "role": "viewer"}},
        ),
        ("POST", annotations, {"json": {"kind": "label", "items": [0], "label": blank}}),
        (
            "POST",
            f"/api/v1/projects/{project_id}/datasets",
            {"files": {"file": ("x.csv", b"a\n1\n2\n", "text/csv")}, "data": {"name": blank}},
        ),
    ]


@pytest.mark.parametrize("blank", BLANKS)
def test_names_that_trim_to_nothing_get_422_saying_so_and_write_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    dataset_id: int,
    session: Session,
    blank: str,
) -> None:
    before = row_counts(session)
    for method, url, kwargs in _blank_requests(project_id, dataset_id, blank):
        response = client.request(method, url, headers=admin_headers, **kwargs)
        assert response.status_code == 422, (url, response.text)
        assert "must not be blank" in response.json()["detail"], (url, response.text)
    assert row_counts(session) == before


def test_a_blank_boundary_label_and_a_blank_member_path_are_refused(
    client: TestClient, admin_headers: dict[str, str], project_id: int, dataset_id: int
) -> None:
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "boundary", "view_id": 1, "points": [[0, 0], [1, 1]], "labels": ["a", " "]},
        headers=admin_headers,
    )
    assert response.status_code == 422, response.text
    assert "labels.1: must not be blank" in response.json()["detail"]
    response = client.delete(f"/api/v1/projects/{project_id}/members/%20", headers=admin_headers)
    assert response.status_code == 422, response.text
    assert "username: must not be blank" in response.json()["detail"]


def test_nul_characters_are_refused_in_names_and_text(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    before = row_counts(session)
    for body in ({"name": "a\x00b"}, {"name": "ok", "description": "x\x00"}):
        response = client.post("/api/v1/projects", json=body, headers=admin_headers)
        assert response.status_code == 422, response.text
        assert "must not contain NUL characters" in response.json()["detail"]
    assert row_counts(session) == before


def test_padded_names_are_accepted_and_stored_trimmed(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post("/api/v1/projects", json={"name": "  Cells \t"}, headers=admin_headers)
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "Cells"


def test_the_published_schema_refuses_blank_names_too(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    upload = "Body_datasets-upload"
    fields = [
        components["ProjectCreate"]["properties"]["name"],
        components["ApiTokenCreate"]["properties"]["name"],
        components["UserCreate"]["properties"]["username"],
        components["MemberWrite"]["properties"]["username"],
        components["LabelCreateByItems"]["properties"]["label"],
        *components["BoundaryCreate"]["properties"]["labels"]["prefixItems"],
        components[upload]["properties"]["name"]["anyOf"][0],
    ]
    for field in fields:
        pattern = re.compile(field["pattern"])
        for blank in BLANKS:
            assert pattern.search(blank) is None, (field, blank)
        for name in ("a", " padded ", "Zellen Ä", "x y"):
            assert pattern.search(name) is not None, (field, name)
        assert pattern.search("a\x00b") is None


def test_a_login_with_nul_in_the_username_is_refused_not_a_database_error(
    client: TestClient, session: Session
) -> None:
    """PostgreSQL refuses NUL in text: the login (and its throttle record) never get there."""
    before = row_counts(session)
    response = client.post(
        "/api/v1/auth/token", data={"username": "ad\x00min", "password": "whatever-it-is"}
    )
    assert response.status_code == 422, response.text
    assert "must not contain NUL characters" in response.json()["detail"]
    assert row_counts(session) == before
