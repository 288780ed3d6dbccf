"""Every integer the API takes is bounded in its schema: 2**63 (past a 64-bit id, a 500 once) in a
path id, a query parameter or a request-body field gets 422 naming the field, writes nothing,
and the published OpenAPI states the bounds (2**53 - 1 at most, which every JSON client reads
exactly)."""

import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.schemas.common import MAX_ID, MAX_INT
from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db

TOO_BIG = 2**63


def at_most(bound: int) -> str:
    return f"Input should be less than or equal to {bound}"


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    return upload_npy(client, project_id, admin_headers, np.arange(12.0).reshape(6, 2))


def assert_refused(response, field: str, message: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] in ("validation_error", "invalid_input")
    assert field in body["detail"], body
    assert message in body["detail"], body


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/projects/{project_id}"),
        ("DELETE", "/api/v1/projects/{project_id}"),
        ("GET", "/api/v1/projects/{project_id}/members"),
        ("GET", "/api/v1/projects/{project_id}/datasets"),
        ("GET", "/api/v1/datasets/{dataset_id}"),
        ("GET", "/api/v1/datasets/{dataset_id}/items"),
        ("GET", "/api/v1/datasets/{dataset_id}/annotations"),
        ("POST", "/api/v1/datasets/{dataset_id}/annotations/undo"),
        ("GET", "/api/v1/datasets/{dataset_id}/side-information"),
        ("GET", "/api/v1/datasets/{dataset_id}/views"),
        ("GET", "/api/v1/datasets/{dataset_id}/runs"),
        ("GET", "/api/v1/runs/{run_id}"),
        ("GET", "/api/v1/runs/{run_id}/result"),
        ("GET", "/api/v1/runs/{run_id}/events"),
        ("POST", "/api/v1/runs/{run_id}/cancel"),
        ("DELETE", "/api/v1/tokens/{token_id}"),
    ],
)
def test_path_ids_past_64_bits_get_422(
    client: TestClient, admin_headers: dict[str, str], method: str, path: str
) -> None:
    """The id in `path` (a route template) is 2**63: the 422 names the template's field."""
    (field,) = re.findall(r"\{(\w+)\}", path)
    response = client.request(method, path.format(**{field: TOO_BIG}), headers=admin_headers)
    assert_refused(response, field, at_most(MAX_ID))


def test_a_view_id_past_64_bits_gets_422(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/views/{TOO_BIG}/coordinates"
    assert_refused(client.get(url, headers=admin_headers), "view_id", at_most(MAX_ID))


def test_one_past_the_largest_integer_gets_422(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Ids are 32-bit INTEGER columns on PostgreSQL; offsets stop at 2**53 - 1."""
    run = client.get(f"/api/v1/runs/{MAX_ID + 1}", headers=admin_headers)
    assert_refused(run, "run_id", at_most(MAX_ID))
    page = client.get(f"/api/v1/projects?offset={MAX_INT + 1}", headers=admin_headers)
    assert_refused(page, "offset", at_most(MAX_INT))


def test_ids_below_one_get_422(client: TestClient, admin_headers: dict[str, str]) -> None:
    for path in ("/api/v1/projects/0", "/api/v1/datasets/-1", "/api/v1/runs/0"):
        assert_refused(client.get(path, headers=admin_headers), "_id", "greater than or equal to 1")


def test_the_largest_id_is_in_range_and_simply_not_found(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    for what in ("projects", "datasets", "runs"):
        response = client.get(f"/api/v1/{what}/{MAX_ID}", headers=admin_headers)
        assert response.status_code == 404, response.text
        assert str(MAX_ID) in response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/projects",
        "/api/v1/tokens",
        "/api/v1/projects/{project_id}/datasets",
        "/api/v1/datasets/{dataset_id}/items",
        "/api/v1/datasets/{dataset_id}/annotations",
        "/api/v1/datasets/{dataset_id}/runs",
    ],
)
def test_offsets_past_64_bits_get_422_and_the_largest_is_an_empty_page(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    dataset_id: int,
    path: str,
) -> None:
    url = path.format(project_id=project_id, dataset_id=dataset_id)
    too_far = client.get(f"{url}?offset={TOO_BIG}", headers=admin_headers)
    assert_refused(too_far, "offset", at_most(MAX_INT))
    assert_refused(client.get(f"{url}?offset=-1", headers=admin_headers), "offset", "greater")
    page = client.get(f"{url}?offset={MAX_INT}", headers=admin_headers)
    assert page.status_code == 200, page.text
    assert page.json()["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "label", "items": [0, TOO_BIG], "label": "A"}, "items.1"),
        ({"kind": "must_link", "items": [TOO_BIG, 1]}, "items.0"),
        ({"kind": "cannot_link", "items_a": [0], "items_b": [TOO_BIG]}, "items_b.0"),
        (
            {
                "kind": "boundary",
                "view_id": TOO_BIG,
                "points": [[0, 0], [1, 1]],
                "labels": ["a", "b"],
            },
            "view_id",
        ),
    ],
)
def test_annotation_integers_past_64_bits_get_422_and_write_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    dataset_id: int,
    session: Session,
    body: dict[str, object],
    field: str,
) -> None:
    before = row_counts(session)
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=admin_headers
    )
    assert_refused(response, field, at_most(MAX_ID if field == "view_id" else MAX_INT))
    assert row_counts(session) == before


def test_an_item_index_within_64_bits_but_past_the_data_names_the_range(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int
) -> None:
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [MAX_INT], "label": "A"},
        headers=admin_headers,
    )
    assert response.status_code == 422, response.text
    assert "items 0 to 5" in response.json()["detail"]


def test_run_and_view_body_integers_past_64_bits_get_422_and_write_nothing(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int, session: Session
) -> None:
    before = row_counts(session)
    run = client.post(
        "/api/v1/runs", json={"dataset_id": TOO_BIG, "algorithm": "cec"}, headers=admin_headers
    )
    assert_refused(run, "dataset_id", at_most(MAX_ID))
    view = client.post(
        f"/api/v1/datasets/{dataset_id}/views",
        json={"method": "features", "x": TOO_BIG, "y": 0},
        headers=admin_headers,
    )
    assert_refused(view, "x", at_most(MAX_INT))
    assert row_counts(session) == before


def test_the_published_schema_bounds_every_integer_parameter(
    client: TestClient,
) -> None:
    """Every integer path/query parameter and body field in the OpenAPI has a maximum (and a
    minimum), so clients and fuzzers know the range before they send anything."""
    schema = client.get("/openapi.json").json()
    unbounded = []

    def visit(node: object, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "integer" and ("maximum" not in node or "minimum" not in node):
                unbounded.append(where)
            if node.get("type") == "integer" and "maximum" in node:
                # Read back exactly, whatever a JSON client's number type.
                assert node["maximum"] <= MAX_INT and float(node["maximum"]) == node["maximum"]
            for key, value in node.items():
                visit(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                visit(value, f"{where}/{i}")

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                visit(parameter["schema"], f"{method.upper()} {path} {parameter['name']}")
    for name, component in schema["components"]["schemas"].items():
        if name.endswith(("Create", "Write")) or name.startswith("Body_"):
            visit(component, name)
    assert unbounded == []


def test_boundary_points_stay_in_the_range_of_view_coordinates(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int, session: Session
) -> None:
    """Views are float32; a point past that range got NaN side scores (null in the response,
    against the schema)."""
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    view = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
    view_id = view["items"][0]["id"]
    body = {"kind": "boundary", "view_id": view_id, "labels": ["a", "b"]}
    before = row_counts(session)
    far = client.post(url, json={**body, "points": [[0, 1e308], [1, 1]]}, headers=admin_headers)
    assert far.status_code == 422, far.text
    assert "points.0.1: Input should be less than or equal to" in far.json()["detail"]
    assert row_counts(session) == before
    edge = [[-3e38, -3e38], [3e38, 3e38]]
    assert client.post(url, json={**body, "points": edge}, headers=admin_headers).status_code == 201
    info = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers)
    assert info.status_code == 200
    scores = info.json()["side_scores"]
    assert len(scores) == 6 and all(isinstance(s, float) for s in scores)
