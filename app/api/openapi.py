"""The published OpenAPI document, shaped so that a generated client works as it reads:

- short operation ids (`projects-list`, `datasets-upload`, `runs-create`...);
- files in multipart bodies and in responses are `format: binary` (FastAPI 0.1xx publishes
  OpenAPI 3.1's `contentMediaType`, which generators such as openapi-python-client read as a
  plain string), text files are strings;
- each operation lists only the error statuses it can return, all with the one error shape
  (`ErrorRead`), worked out from what the route depends on plus the refusals its use case
  makes (`_RAISES`).
"""

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts

from app.api.deps import admin_user, current_user
from app.api.openapi_variants import split_exclusive_groups
from app.api.schemas.common import ErrorRead

# Endpoint function name -> operation id. A route missing here gets `<tag>-<function name>`.
OPERATION_IDS = {
    "read_health": "health-check",
    "create_access_token": "auth-token",
    "logout": "auth-logout",
    "read_me": "auth-me",
    "read_sign_ins": "sessions-list",
    "revoke_sign_in": "sessions-revoke",
    "create_user": "users-create",
    "create_api_token": "tokens-create",
    "read_api_tokens": "tokens-list",
    "revoke_api_token": "tokens-revoke",
    "read_projects": "projects-list",
    "create_project": "projects-create",
    "read_project": "projects-get",
    "delete_project": "projects-delete",
    "read_members": "members-list",
    "set_member": "members-set",
    "remove_member": "members-remove",
    "read_datasets": "datasets-list",
    "create_dataset": "datasets-upload",
    "create_collection": "collections-upload",
    "read_dataset": "datasets-get",
    "delete_dataset": "datasets-delete",
    "featurize_dataset": "datasets-featurize",
    "featurization_info": "featurization-info",
    "read_items": "items-list",
    "read_features": "datasets-features",
    "read_image": "datasets-image",
    "read_image_dzi": "datasets-image-dzi",
    "read_image_tile": "datasets-image-tile",
    "read_result_dzi": "runs-result-dzi",
    "read_result_tile": "runs-result-tile",
    "read_ground_truth": "datasets-ground-truth",
    "read_views": "views-list",
    "create_view": "views-create",
    "read_view_coordinates": "views-coordinates",
    "create_annotation": "annotations-create",
    "create_annotations": "annotations-create-batch",
    "read_annotations": "annotations-list",
    "undo_annotation": "annotations-undo",
    "redo_annotation": "annotations-redo",
    "delete_annotation": "annotations-delete",
    "edit_annotation": "annotations-edit",
    "read_side_information": "side-information-get",
    "read_algorithms": "algorithms-list",
    "create_run": "runs-create",
    "apply_run": "runs-apply",
    "read_runs": "runs-list",
    "read_run": "runs-get",
    "cancel_run": "runs-cancel",
    "stream_run_events": "runs-events",
    "read_run_result": "runs-result",
    "read_run_labels_csv": "runs-result-csv",
    "read_run_labels_npy": "runs-result-npy",
    "read_run_mask": "runs-result-png",
    "read_applied": "runs-applied",
    "cancel_applied": "runs-applied-cancel",
    "read_applied_masks": "runs-applied-masks",
    "read_suggestions": "suggestions-get",
    "read_labels_and_clusters": "exports-labels-clusters",
}

# Refusals a use case makes beyond what the route's parameters and dependencies imply:
# 409 for a state that forbids the act (a dataset still featurizing, a run not finished,
# nothing to undo, the last owner), 404 for an id named in the body or query, 401 for a wrong
# password, 415 for a file of another type, 429 for the limits that say when to come back.
_RAISES: dict[str, frozenset[int]] = {
    "auth-token": frozenset({401, 429}),
    "users-create": frozenset({409}),
    "members-set": frozenset({409}),
    "members-remove": frozenset({409}),
    "datasets-upload": frozenset({415, 429}),
    "collections-upload": frozenset({413, 415, 429}),
    "datasets-featurize": frozenset({409, 429}),
    "datasets-features": frozenset({409}),
    "items-list": frozenset({409}),
    "views-create": frozenset({409}),
    "annotations-undo": frozenset({409}),
    "annotations-redo": frozenset({409}),
    "annotations-delete": frozenset({409}),
    "annotations-edit": frozenset({409}),
    "side-information-get": frozenset({409}),
    "runs-create": frozenset({404, 409, 429}),
    "runs-apply": frozenset({404, 409, 429}),
    "runs-cancel": frozenset({409}),
    "runs-events": frozenset({401, 403}),  # checked in the stream's own session
    "runs-result": frozenset({409}),
    "runs-result-csv": frozenset({409}),
    "runs-result-npy": frozenset({409}),
    "runs-result-png": frozenset({409}),
    "runs-result-dzi": frozenset({409}),
    "runs-result-tile": frozenset({409}),
    "runs-applied-masks": frozenset({409}),
    "suggestions-get": frozenset({404, 409}),
    "exports-labels-clusters": frozenset({404, 409}),
}

_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
_DESCRIPTIONS = {
    400: "The request body could not be parsed",
    401: "Not signed in, or the token is unknown, expired or revoked",
    403: "The caller's role does not allow this, or a cross-site write was refused",
    404: "A named resource does not exist or is not visible to the caller",
    409: "The resource's state does not allow this now",
    413: "The request body is over the upload limit",
    415: "The uploaded file is of a type the server does not read",
    422: "The request does not match the schema, or its values do not fit the data",
    429: "Too many requests or active runs; see the Retry-After header",
}


def operation_id(route: APIRoute) -> str:
    if route.name in OPERATION_IDS:
        return OPERATION_IDS[route.name]
    tag = str(route.tags[0]) if route.tags else "app"
    return f"{tag}-{route.name}".replace("_", "-").replace(" ", "-")


def _dependants(dependant: Dependant) -> Iterator[Dependant]:
    """The route's own parameters and those of every dependency, however deep."""
    yield dependant
    for dep in dependant.dependencies:
        yield from _dependants(dep)


def error_statuses(route: APIRoute) -> set[int]:
    """The 4xx statuses this route can answer with."""
    dependants = list(_dependants(route.dependant))
    calls = {d.call for d in dependants if d.call is not None}
    path_params = any(d.path_params for d in dependants)
    body_params = any(d.body_params for d in dependants)
    query_params = any(d.query_params for d in dependants)
    checks_role = any(getattr(c, "__qualname__", "").startswith("project_role.") for c in calls)
    methods = route.methods or set()
    statuses = set(_RAISES.get(operation_id(route), ()))
    if current_user in calls:
        statuses.add(401)
    if checks_role or admin_user in calls or methods & _UNSAFE:
        statuses.add(403)  # a role too small, not an admin, or a cross-site write
    if path_params or checks_role:
        statuses.add(404)
    has_body = body_params or methods & {"POST", "PUT", "PATCH"}
    if has_body:
        statuses.add(413)  # the upload limit reads Content-Length before any route
    if body_params:
        statuses.add(400)  # a body that cannot be parsed at all (not JSON, broken multipart)
    if path_params or query_params or body_params:
        statuses.add(422)
    return statuses


def _binary_files(schema: dict[str, Any]) -> None:
    """Multipart file fields as `format: binary` (what OpenAPI 3.0 generators understand)."""
    for name, component in schema.get("components", {}).get("schemas", {}).items():
        if not name.startswith("Body_"):
            continue
        for prop in component.get("properties", {}).values():
            if prop.pop("contentMediaType", None) is not None:
                prop.update(BINARY)


def _binary_responses(schema: dict[str, Any]) -> None:
    """Files a route returns (NPY, PNG, raw arrays) as binary strings, so that a client hands
    back the bytes instead of parsing them as JSON; CSV as a string."""
    for path in schema["paths"].values():
        for operation in path.values():
            for response in operation["responses"].values():
                for media, content in response.get("content", {}).items():
                    # An event stream's schema would describe each event, not the body.
                    if media in ("application/json", "text/event-stream") or content.get("schema"):
                        continue
                    # Text (CSV) as a string: clients decode it as text.
                    text = media.startswith("text/")
                    content["schema"] = {"type": "string"} if text else BINARY


BINARY = {"type": "string", "format": "binary"}


def install_openapi(app: FastAPI) -> None:
    """Replace `app.openapi` with the shaped document (built once, then cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        schema.setdefault("components", {}).setdefault("schemas", {})
        schema["components"]["schemas"]["ErrorRead"] = ErrorRead.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        for extra, definition in (
            schema["components"]["schemas"]["ErrorRead"].pop("$defs", {}).items()
        ):
            schema["components"]["schemas"].setdefault(extra, definition)
        _binary_files(schema)
        _binary_responses(schema)
        split_exclusive_groups(schema)
        _set_errors(schema, _api_routes(app))
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _api_routes(app: FastAPI) -> dict[str, APIRoute]:
    """Operation id -> route, through included routers (FastAPI keeps those nested)."""
    found = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and route.include_in_schema:
            found[operation_id(route)] = route
    return found


def _set_errors(schema: dict[str, Any], routes: dict[str, APIRoute]) -> None:
    error_ref = {"$ref": "#/components/schemas/ErrorRead"}
    for path in schema["paths"].values():
        for operation in path.values():
            route = routes[operation["operationId"]]
            responses = operation["responses"]
            for status in [s for s in responses if s[0] in "45"]:
                del responses[status]
            for status in sorted(error_statuses(route)):
                responses[str(status)] = {
                    "description": _DESCRIPTIONS[status],
                    "content": {"application/json": {"schema": error_ref}},
                }
