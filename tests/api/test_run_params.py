"""What a run would refuse is refused when it is requested: every algorithm's published JSON
Schema bounds its parameters (seeds to what NumPy accepts, SMIC's n_neighbors, no NaN or
infinity), values that depend on the data get 422 at POST /runs naming the field, and an NPY
upload whose header lies about its size is refused from the header. Nothing is written."""

import io
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db

SEED_MAX = 2**32 - 1


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    """Six items with two features."""
    x = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 1.0], [8.0, 9.0], [9.0, 8.5], [10.0, 9.5]])
    return upload_npy(client, project_id, admin_headers, x)


def post_run(
    client: TestClient, headers: dict[str, str], dataset_id: int, algorithm: str, params: object
):  # type: ignore[no-untyped-def]
    return client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset_id, "algorithm": algorithm, "params": params},
        headers=headers,
    )


REFUSED = {
    "cec seed past 32 bits": (
        "cec",
        {"random_state": 2**40},
        ["params.random_state", f"less than or equal to {SEED_MAX}"],
    ),
    "ppc seed past 32 bits": ("ppc", {"random_state": 2**32}, ["params.random_state"]),
    "negative seed": ("c4s", {"random_state": -1}, ["params.random_state", "greater than"]),
    "smic negative n_neighbors": (
        "smic",
        {"n_neighbors": -5},
        ["params.n_neighbors", "greater than or equal to 1", "'auto'"],
    ),
    "smic n_neighbors over 100": (
        "smic",
        {"n_neighbors": 101},
        ["params.n_neighbors", "less than or equal to 100"],
    ),
    "beta as the string NaN": ("cec-ib", {"beta": "NaN"}, ["params.beta", "finite number"]),
    "beta as the string Infinity": (
        "cec-ib",
        {"beta": "Infinity"},
        ["params.beta", "finite number"],
    ),
    "cec-ib labeled_weight 0": (
        "cec-ib",
        {"labeled_weight": 0},
        ["params.labeled_weight", "greater than or equal to 1", "'auto'"],
    ),
    "cec-ib labeled_weight not auto": (
        "cec-ib",
        {"labeled_weight": "best"},
        ["params.labeled_weight", "'auto'"],
    ),
    "cec-ib labeled_weight 2.5": ("cec-ib", {"labeled_weight": 2.5}, ["params.labeled_weight"]),
    "cec has no tied spherical family": (
        "cec",
        {"covariance": "tied_spherical"},
        ["params.covariance", "'spherical'"],
    ),
    "c4s tied is ppc's name": (
        "c4s",
        {"covariance": "tied"},
        ["params.covariance", "'tied_spherical'"],
    ),
    "ppc tol NaN": ("ppc", {"tol": "nan"}, ["params.tol", "finite number"]),
    "c3l leakage -inf": ("c3l", {"leakage": "-inf"}, ["params.leakage", "finite number"]),
    # Values that depend on the dataset (6 items, 2 features).
    "more clusters than items": ("cec", {"n_clusters": 7}, ["params.n_clusters", "6 items"]),
    "more ppc components than items": (
        "ppc",
        {"n_components": 7},
        ["params.n_components", "6 items"],
    ),
    "more smic clusters than items": ("smic", {"n_clusters": 7}, ["params.n_clusters"]),
    "more smic neighbours than items allow": (
        "smic",
        {"n_neighbors": 6},
        ["params.n_neighbors", "at least 7 items", "has 6"],
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_parameters_a_run_would_refuse_get_422_at_post_and_write_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    dataset_id: int,
    session: Session,
    case: str,
) -> None:
    algorithm, params, words = REFUSED[case]
    before = row_counts(session)
    response = post_run(client, admin_headers, dataset_id, algorithm, params)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_input"
    for word in words:
        assert word in response.json()["detail"], response.json()["detail"]
    assert row_counts(session) == before


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_the_json_nan_and_infinity_tokens_are_refused_as_not_finite(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int, session: Session, token: str
) -> None:
    """Python's JSON parser reads the bare tokens NaN and Infinity; they are not numbers a run
    (or an annotation) can use."""
    before = row_counts(session)
    body = f'{{"dataset_id": {dataset_id}, "algorithm": "cec-ib", "params": {{"beta": {token}}}}}'
    response = client.post(
        "/api/v1/runs",
        content=body,
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == "params.beta: Input should be a finite number"
    link = (
        '{"kind": "must_link", "items": [0, 1], "confidence": ' + token + "}"
        if token != "Infinity"
        else '{"kind": "boundary", "view_id": 1, "points": [[0, Infinity], [1, 1]], '
        '"labels": ["a", "b"]}'
    )
    response = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        content=link,
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert "finite number" in response.json()["detail"]
    assert row_counts(session) == before


def test_full_covariance_on_fewer_items_than_features_is_refused_at_post(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    wide = upload_npy(client, project_id, admin_headers, np.eye(4)[:3] + 0.1)
    before = row_counts(session)
    for algorithm in ("cec", "cec-ib", "c4s"):
        response = post_run(client, admin_headers, wide, algorithm, {"n_clusters": 1})
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert "params.covariance" in detail and "3 items and 4 features" in detail
    accepted = post_run(
        client, admin_headers, wide, "cec", {"n_clusters": 1, "covariance": "diagonal"}
    )
    assert accepted.status_code == 202, accepted.text
    assert row_counts(session)["runs"] == before["runs"] + 1


def test_a_dataset_of_one_item_cannot_be_clustered(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    single = upload_npy(client, project_id, admin_headers, np.array([[1.0, 2.0]]))
    before = row_counts(session)
    response = post_run(client, admin_headers, single, "ppc", {"n_components": 1})
    assert response.status_code == 422, response.text
    assert "1 item(s); clustering needs at least 2" in response.json()["detail"]
    assert row_counts(session) == before


def test_the_largest_values_the_schema_allows_are_accepted(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int
) -> None:
    cec = post_run(
        client, admin_headers, dataset_id, "cec", {"random_state": SEED_MAX, "n_clusters": 3}
    )
    assert cec.status_code == 202, cec.text
    assert cec.json()["params"]["random_state"] == SEED_MAX
    smic = post_run(client, admin_headers, dataset_id, "smic", {"n_neighbors": 5, "n_clusters": 2})
    assert smic.status_code == 202, smic.text


def test_every_published_parameter_schema_bounds_numbers_and_seeds(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    algorithms = client.get("/api/v1/algorithms", headers=admin_headers).json()["items"]
    assert {a["id"] for a in algorithms} == {"cec", "cec-ib", "ppc", "c4s", "c3l", "smic"}
    for algorithm in algorithms:
        properties = algorithm["parameters"]["properties"]
        seed = next(s for s in properties["random_state"]["anyOf"] if s["type"] == "integer")
        assert (seed["minimum"], seed["maximum"]) == (0, SEED_MAX), algorithm["id"]
        for name, schema in properties.items():
            for option in schema.get("anyOf", [schema]):
                if option.get("type") in ("integer", "number"):
                    bounds = {"minimum", "exclusiveMinimum"} & option.keys()
                    assert bounds and {"maximum", "exclusiveMaximum"} & option.keys(), (
                        algorithm["id"],
                        name,
                    )
    smic = next(a for a in algorithms if a["id"] == "smic")
    n_neighbors = smic["parameters"]["properties"]["n_neighbors"]["anyOf"]
    assert {"type": "integer", "minimum": 1, "maximum": 100} in n_neighbors


def _npy_claiming(shape: tuple[int, ...], data: bytes) -> bytes:
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


@pytest.mark.parametrize(
    ("shape", "data"),
    [
        ((10**9, 4), np.zeros((10, 4)).tobytes()),  # claims 32 GB, holds 320 bytes
        ((10, 4), np.zeros((10, 4)).tobytes() + b"\0" * 8),  # 8 bytes past the array
    ],
)
def test_an_npy_header_that_lies_about_the_size_is_refused_from_the_header(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    shape: tuple[int, ...],
    data: bytes,
) -> None:
    before = row_counts(session)
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("lie.npy", _npy_claiming(shape, data), "application/octet-stream")},
        headers=admin_headers,
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert f"claims an array of shape {shape}" in detail
    assert f"{len(data):,} bytes after the header" in detail
    assert row_counts(session) == before


def test_an_npy_whose_header_tells_the_truth_is_accepted(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    data = np.arange(40.0).reshape(10, 4)
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("ok.npy", _npy_claiming((10, 4), data.tobytes()), "application/x-npy")},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    assert (response.json()["n_items"], response.json()["n_features"]) == (10, 4)


def test_the_error_body_is_json_even_for_a_bare_nan_token(
    client: TestClient, admin_headers: dict[str, str], dataset_id: int
) -> None:
    """The refusal itself must be valid JSON (no NaN echoed back in the body)."""
    response = client.post(
        "/api/v1/runs",
        content=f'{{"dataset_id": {dataset_id}, "algorithm": "ppc", "params": {{"tol": NaN}}}}',
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    json.loads(response.text, parse_constant=lambda token: pytest.fail(f"{token} in body"))


@pytest.mark.parametrize("kind", ["csv", "npy"])
def test_finite_values_too_large_to_compute_with_are_refused_at_upload(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session, kind: str
) -> None:
    """1e308 and -1e308 are finite, but their spread overflows a 64-bit float: the import's
    statistics and PCA view (a 500 once) and every fit would fail on them."""
    x = np.array([[1.0, 1e308], [2.0, -1e308], [3.0, 1.5e308]])
    if kind == "csv":
        content = ("a,b\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in x)).encode()
        column, media = "'b'", "text/csv"
    else:
        buffer = io.BytesIO()
        np.save(buffer, x)
        content, column, media = buffer.getvalue(), "'x1'", "application/octet-stream"
    before = row_counts(session)
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": (f"big.{kind}", content, media)},
        headers=admin_headers,
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert f"column {column} are too large to compute with" in detail
    assert row_counts(session) == before
