"""The published OpenAPI document says what a client generator needs: short operation ids,
binary files, enums with the stored values, paging on every list, and per operation only the
error statuses it can return, each with the one error shape that every error body has."""

import re
from typing import Any, get_args

import jsonschema
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.api.paging import MAX_ITEMS_LIMIT, MAX_LIMIT
from app.api.schemas.runs import RunCreate
from app.api.schemas.views import ViewMethod
from app.config import Settings
from app.jobs.algorithms import ALGORITHMS
from app.jobs.featurize.recipe import RecipeParams
from app.main import create_app
from app.services import runs
from app.sideinfo.model import KINDS, SCRIBBLE

SCHEMA: dict[str, Any] = create_app(
    Settings(database_url="sqlite://", migrate_on_start=False, load_demo_data=False)
).openapi()
OPERATIONS = {op["operationId"]: op for path in SCHEMA["paths"].values() for op in path.values()}
COMPONENTS = SCHEMA["components"]["schemas"]


def test_operation_ids_are_short_unique_and_named_after_the_resource() -> None:
    ids = [op["operationId"] for path in SCHEMA["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    for operation_id in ids:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)+", operation_id), operation_id
        assert len(operation_id) <= 30, operation_id
    assert {"projects-list", "datasets-upload", "annotations-create", "runs-create"} <= set(ids)
    assert {"runs-result", "runs-result-csv", "runs-result-npy", "runs-result-png"} <= set(ids)


def test_uploads_and_file_results_are_binary() -> None:
    upload = COMPONENTS["Body_datasets-upload"]["properties"]
    assert upload["file"]["format"] == "binary" and "contentMediaType" not in upload["file"]
    assert upload["ground_truth"]["format"] == "binary"

    def content(operation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = OPERATIONS[operation_id]["responses"]["200"]["content"]
        return result

    binary = {"type": "string", "format": "binary"}
    assert content("runs-result-npy") == {"application/x-npy": {"schema": binary}}
    assert content("runs-result-png") == {"image/png": {"schema": binary}}
    assert content("runs-result-csv") == {"text/csv": {"schema": {"type": "string"}}}
    assert content("datasets-features")["application/x-npy"]["schema"] == binary
    # The JSON result is only JSON: one operation, one way to parse its answer.
    assert list(content("runs-result")) == ["application/json"]


def _enum(component: str, field: str) -> set[str]:
    return set(COMPONENTS[component]["properties"][field]["enum"])


def test_status_kind_and_method_are_enums_of_the_stored_values() -> None:
    assert _enum("RunRead", "status") == set(runs.ACTIVE + runs.TERMINAL)
    assert _enum("AnnotationRead", "kind") == {*KINDS, SCRIBBLE}
    assert _enum("ViewRead", "method") == set(get_args(ViewMethod))
    assert _enum("DatasetRead", "kind") == {"table", "image"}
    assert _enum("DatasetRead", "status") == {"ready", "featurizing", "failed"}


def _page_component(op: dict[str, Any]) -> str | None:
    """The name of the `...Page` schema an operation answers with, if any."""
    content = op["responses"].get("200", {}).get("content", {})
    ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
    name = ref.rsplit("/", 1)[-1]
    return name if name.endswith("Page") else None


def test_every_list_takes_limit_and_offset_with_a_published_maximum() -> None:
    lists = {i: op for i, op in OPERATIONS.items() if _page_component(op)}
    assert set(lists) == {i for i in OPERATIONS if i.endswith("-list")}
    assert len(lists) == 10
    for operation_id, op in lists.items():
        params = {p["name"]: p["schema"] for p in op.get("parameters", [])}
        assert {"limit", "offset"} <= set(params), operation_id
        expected = MAX_ITEMS_LIMIT if operation_id == "items-list" else MAX_LIMIT
        assert params["limit"]["maximum"] == expected, operation_id
        properties = COMPONENTS[_page_component(op)]["properties"]
        assert {"items", "total", "limit", "offset"} <= set(properties), operation_id


def _errors(operation_id: str) -> set[int]:
    return {int(s) for s in OPERATIONS[operation_id]["responses"] if s[0] in "45"}


def test_each_operation_lists_only_the_errors_it_can_return() -> None:
    assert _errors("health-check") == set()
    assert _errors("auth-me") == {401}
    assert _errors("projects-list") == {401, 422}
    assert _errors("datasets-upload") == {400, 401, 403, 404, 413, 415, 422, 429}
    assert 429 in _errors("datasets-featurize")
    assert _errors("runs-create") == {400, 401, 403, 404, 409, 413, 422, 429}
    assert 415 not in _errors("projects-create") and 409 not in _errors("runs-get")
    for op in OPERATIONS.values():
        for status, response in op["responses"].items():
            if status[0] in "45":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorRead"}


@pytest.mark.db
def test_every_error_body_has_the_one_shape(
    client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    allowed = set(COMPONENTS["ErrorRead"]["properties"])

    def error(method: str, url: str, status: int, **kwargs: Any) -> dict[str, Any]:
        response = client.request(method, url, **kwargs)
        assert response.status_code == status, response.text
        body: dict[str, Any] = response.json()
        assert {"detail", "code"} <= set(body) <= allowed, body
        return body

    # 422 from the schema and 422 from the data: one code, `errors` says where the schema failed.
    by_schema = error("GET", "/api/v1/projects?limit=0", 422, headers=admin_headers)
    assert by_schema["code"] == "invalid_input"
    assert [e["loc"] for e in by_schema["errors"]] == ["limit"]
    bad_file = {"file": ("x.csv", b"\xff\xfe not a table", "text/csv")}
    by_data = error(
        "POST",
        f"/api/v1/projects/{project_id}/datasets",
        422,
        files=bad_file,
        headers=admin_headers,
    )
    assert by_data["code"] == "invalid_input" and "errors" not in by_data
    assert error("GET", "/api/v1/auth/me", 401)["code"] == "not_authenticated"
    assert (
        error("GET", "/api/v1/projects/999999", 404, headers=admin_headers)["code"] == "not_found"
    )
    assert error("PUT", "/api/v1/projects", 405, headers=admin_headers)["code"] == (
        "method_not_allowed"
    )


def test_what_the_server_refuses_by_rule_the_schema_says() -> None:
    """An unknown algorithm and a repeated filter or scale are refused by the schema itself
    (an enum, uniqueItems), so clients and fuzzers see the rule before the server applies it."""
    assert COMPONENTS["RunCreate"]["properties"]["algorithm"]["enum"] == sorted(ALGORITHMS)
    recipe = COMPONENTS["RecipeParams"]["properties"]
    assert recipe["filters"]["uniqueItems"] is True
    assert recipe["sigmas"]["uniqueItems"] is True


def test_the_rules_the_schema_states_are_enforced_with_their_field_named() -> None:
    with pytest.raises(ValidationError, match="unknown algorithm 'kmeans'"):
        RunCreate(dataset_id=1, algorithm="kmeans")
    with pytest.raises(ValidationError, match="filters"):
        RecipeParams(filters=["edges", "edges"])
    with pytest.raises(ValidationError, match="sigmas"):
        RecipeParams(sigmas=[1.0, 1.0])


def _annotation_body_options() -> list[str]:
    (post,) = [op for op in OPERATIONS.values() if op["operationId"] == "annotations-create"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    return [option["$ref"].rsplit("/", 1)[-1] for option in body["oneOf"]]


def test_every_way_to_write_an_annotation_is_a_plain_object_schema() -> None:
    """Client generators skip a schema with a top-level oneOf (openapi-python-client typed the
    body `Any`): each way to name items is its own object schema (app/api/openapi_variants.py),
    and a body naming items two ways matches two of them, so oneOf still refuses it."""
    assert not [name for name, c in COMPONENTS.items() if "oneOf" in c and "properties" in c]
    options = _annotation_body_options()
    assert {"LabelCreateByItems", "LabelCreateByItemIds", "ScribbleCreateByErase"} <= set(options)
    assert "MustLinkCreateByStrokes" in options and "CannotLinkCreateByItemIds" in options

    def matches(body: dict[str, Any]) -> list[str]:
        return [
            name
            for name in options
            if name.startswith("Label")
            and jsonschema.Draft202012Validator(COMPONENTS[name]).is_valid(body)
        ]

    assert matches({"kind": "label", "items": [1], "label": "a"}) == ["LabelCreateByItems"]
    assert matches({"kind": "label", "item_ids": ["x"], "label": "a"}) == ["LabelCreateByItemIds"]
    both = {"kind": "label", "items": [1], "item_ids": ["x"], "label": "a"}
    assert len(matches(both)) == 2  # not exactly one: refused, as the server refuses it
    assert matches({"kind": "label", "label": "a"}) == []
