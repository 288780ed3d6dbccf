"""A cluster count left empty with no two groups told apart is a guess (PPC and SMIC fit 3):
the run's result says so among its warnings, and says nothing once the count is set or the
expert has told groups apart."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.api.test_run_numbering import result
from tests.api.test_runs import run_to_end

pytestmark = pytest.mark.db

PARAMETER = {"ppc": "n_components", "smic": "n_clusters"}


def _warnings(
    client: TestClient, headers: dict[str, str], dataset_id: int, algorithm: str, **params: object
) -> tuple[list[str], int]:
    run = run_to_end(client, headers, dataset_id, algorithm, **params)
    assert run["status"] == "succeeded", run["error"]
    body = result(client, headers, run["id"])
    return body["metrics"]["warnings"], len(np.unique(body["labels"]))


@pytest.mark.parametrize("algorithm", sorted(PARAMETER))
def test_a_guessed_count_is_said_and_a_chosen_one_is_not(
    client: TestClient, admin_headers: dict[str, str], iris_id: int, algorithm: str
) -> None:
    name = PARAMETER[algorithm]
    warnings, clusters = _warnings(client, admin_headers, iris_id, algorithm)
    guesses = [w for w in warnings if w.startswith(f"{name} was left empty")]
    assert len(guesses) == 1, warnings
    assert "so 3 were fitted, a guess" in guesses[0]
    assert clusters == 3

    warnings, clusters = _warnings(client, admin_headers, iris_id, algorithm, **{name: 4})
    assert not [w for w in warnings if "left empty" in w], warnings
    assert clusters == 4


@pytest.mark.parametrize("algorithm", sorted(PARAMETER))
def test_groups_told_apart_set_the_count_and_nothing_is_guessed(
    client: TestClient, admin_headers: dict[str, str], iris_id: int, algorithm: str
) -> None:
    """Two items kept apart by a hard cannot-link are two groups: the count is theirs."""
    response = client.post(
        f"/api/v1/datasets/{iris_id}/annotations",
        json={"kind": "cannot_link", "items_a": [0], "items_b": [100]},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    warnings, clusters = _warnings(client, admin_headers, iris_id, algorithm)
    assert not [w for w in warnings if "left empty" in w], warnings
    assert clusters == 2


def test_the_result_says_how_the_count_was_chosen(
    client: TestClient, admin_headers: dict[str, str], iris_id: int
) -> None:
    """Issue 36's iris case through the API: setosa and virginica labeled, eight versicolor
    items must-linked and cannot-linked from virginica, the count left empty: three groups,
    and the result says where the three came from."""
    annotations = [
        {"kind": "label", "items": list(range(0, 5)), "label": "setosa"},
        {"kind": "label", "items": list(range(100, 105)), "label": "virginica"},
        {"kind": "must_link", "items": list(range(50, 58))},
        {"kind": "cannot_link", "items_a": [50], "items_b": [100]},
    ]
    for body in annotations:
        response = client.post(
            f"/api/v1/datasets/{iris_id}/annotations", json=body, headers=admin_headers
        )
        assert response.status_code == 201, response.text
    run = run_to_end(client, admin_headers, iris_id, "cec-ib")
    assert run["status"] == "succeeded", run["error"]
    count = result(client, admin_headers, run["id"])["metrics"]["cluster_count"]
    assert count["parameter"] == "n_clusters" and count["asked"] is None
    assert count["started"] == 3
    assert "2 label categories" in count["how"] and "1 must-linked set" in count["how"]

    run = run_to_end(client, admin_headers, iris_id, "cec-ib", n_clusters=5)
    count = result(client, admin_headers, run["id"])["metrics"]["cluster_count"]
    assert (count["asked"], count["started"], count["how"]) == (5, 5, "n_clusters 5, as set")
