"""PPC and CEC-IB runs with ``warm_start`` continue the dataset's latest run of their algorithm
(its mixture, its partition); the run's metrics say what they continued."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.api.test_run_numbering import result
from tests.api.test_runs import run_to_end, upload_csv
from tests.engine.ppc.test_warm_start import _corners, _split

pytestmark = pytest.mark.db


def _same_split(a: np.ndarray, b: np.ndarray) -> bool:
    return max(float(np.mean(a == b)), float(np.mean(a != b))) >= 0.98


@pytest.fixture
def corners_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    X = _corners()
    return upload_csv(client, project_id, admin_headers, X, _split(X, 0))


def _annotate(
    client: TestClient, headers: dict[str, str], dataset_id: int, body: dict[str, object]
) -> None:
    response = client.post(f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=headers)
    assert response.status_code == 201, response.text


def test_a_warm_run_keeps_the_split_it_continues_where_fresh_runs_move(
    client: TestClient, admin_headers: dict[str, str], corners_id: int
) -> None:
    X = _corners()
    first = run_to_end(client, admin_headers, corners_id, "ppc", n_components=2, random_state=1)
    assert first["status"] == "succeeded", first["error"]
    kept = result(client, admin_headers, first["id"])
    assert kept["cluster_params"]["covariance"] == "full"
    assert np.asarray(kept["cluster_params"]["covariances"]).shape == (2, 2, 2)
    split = np.asarray(kept["labels"])
    assert _same_split(split, _split(X, 0)) or _same_split(split, _split(X, 1))
    # within one blob: either split holds
    _annotate(client, admin_headers, corners_id, {"kind": "must_link", "items": [0, 1]})

    fresh_splits = []
    for seed in range(4):
        fresh = run_to_end(
            client, admin_headers, corners_id, "ppc", n_components=2, random_state=seed
        )
        body = result(client, admin_headers, fresh["id"])
        assert "warm_start" not in body["metrics"]
        fresh_splits.append(_same_split(np.asarray(body["labels"]), split))
    assert not all(fresh_splits)  # fresh starts do land in the other split

    previous = fresh["id"]
    for seed in range(4):
        warm = run_to_end(
            client,
            admin_headers,
            corners_id,
            "ppc",
            n_components=2,
            random_state=seed,
            warm_start=True,
        )
        assert warm["status"] == "succeeded", warm["error"]
        body = result(client, admin_headers, warm["id"])
        assert body["metrics"]["warm_start"] == {"from_run": previous, "continued": True}
        previous = warm["id"]
        if seed == 0:
            split = np.asarray(body["labels"])  # continues the last fresh run's split
        assert _same_split(np.asarray(body["labels"]), split)


def test_a_warm_run_with_nothing_to_continue_starts_afresh_and_says_so(
    client: TestClient, admin_headers: dict[str, str], corners_id: int
) -> None:
    run = run_to_end(client, admin_headers, corners_id, "ppc", n_components=2, warm_start=True)
    assert run["status"] == "succeeded", run["error"]
    assert result(client, admin_headers, run["id"])["metrics"]["warm_start"] == {
        "from_run": None,
        "continued": False,
    }
    # Another number of components cannot continue that mixture: a fresh start, said so.
    cec = run_to_end(client, admin_headers, corners_id, "cec", n_clusters=4)
    assert cec["status"] == "succeeded", cec["error"]
    three = run_to_end(client, admin_headers, corners_id, "ppc", n_components=3, warm_start=True)
    assert three["status"] == "succeeded", three["error"]
    # The latest PPC run is continued, not the CEC run that finished after it.
    assert result(client, admin_headers, three["id"])["metrics"]["warm_start"] == {
        "from_run": run["id"],
        "continued": False,
    }


def test_a_warm_cec_ib_run_continues_the_latest_cec_ib_partition(
    client: TestClient, admin_headers: dict[str, str], corners_id: int
) -> None:
    X = _corners()
    # Items 0 and 40, at the corners (-4, -4) and (-4, 4), named apart: two clusters.
    for item, name in ((0, "a"), (40, "b")):
        body = {"kind": "label", "items": [item], "label": name}
        _annotate(client, admin_headers, corners_id, body)
    first = run_to_end(client, admin_headers, corners_id, "cec-ib", warm_start=True)
    assert first["status"] == "succeeded", first["error"]
    body = result(client, admin_headers, first["id"])
    assert body["metrics"]["warm_start"] == {"from_run": None, "continued": False}
    split = np.asarray(body["labels"])

    ppc = run_to_end(client, admin_headers, corners_id, "ppc", n_components=2)
    assert ppc["status"] == "succeeded", ppc["error"]
    again = run_to_end(client, admin_headers, corners_id, "cec-ib", warm_start=True)
    assert again["status"] == "succeeded", again["error"]
    body = result(client, admin_headers, again["id"])
    # The latest CEC-IB run, not the PPC run after it; nothing changed, so its partition holds.
    assert body["metrics"]["warm_start"] == {"from_run": first["id"], "continued": True}
    assert _same_split(np.asarray(body["labels"]), split)
    assert _same_split(split, _split(X, 1))  # the split that keeps the two apart

    fresh = run_to_end(client, admin_headers, corners_id, "cec-ib")
    assert "warm_start" not in result(client, admin_headers, fresh["id"])["metrics"]


@pytest.mark.parametrize("algorithm, name", [("ppc", "PPC"), ("cec-ib", "CEC-IB")])
def test_warm_start_is_a_documented_parameter(
    client: TestClient, admin_headers: dict[str, str], algorithm: str, name: str
) -> None:
    page = client.get("/api/v1/algorithms", headers=admin_headers).json()
    described = {a["id"]: a for a in page["items"]}[algorithm]
    field = described["parameters"]["properties"]["warm_start"]
    assert field["type"] == "boolean" and field["default"] is False
    assert f"latest finished {name} run" in field["description"]


@pytest.mark.parametrize("algorithm", ["cec-ib", "ppc"])
def test_a_warm_run_the_labels_agree_with_draws_no_fresh_start(
    client: TestClient, admin_headers: dict[str, str], corners_id: int, algorithm: str
) -> None:
    """The expert's loop: a warm re-run after a label its partition already agrees with runs
    only the continued start (its cost history is that start's sweeps alone), where the first
    run drew all of its starts; the run keeps what the next one compares with."""
    for item, name in ((0, "a"), (40, "b")):
        _annotate(
            client, admin_headers, corners_id, {"kind": "label", "items": [item], "label": name}
        )
    first = run_to_end(client, admin_headers, corners_id, algorithm, n_init=3)
    assert first["status"] == "succeeded", first["error"]
    kept = result(client, admin_headers, first["id"])
    assert kept["cluster_params"]["agreement"] == 1.0
    if algorithm == "ppc":  # (CEC-IB's labeled starts end alike here and are run once)
        assert len(kept["cost_history"]) > kept["cluster_params"]["n_iter"]  # three starts
    else:  # the weight search ran with the two labeled items
        assert kept["cluster_params"]["weight_searched_with"] == 2
        assert kept["cluster_params"]["labeled_weight"] == 1
    # Item 1 is in item 0's corner: the partition already agrees with its label.
    _annotate(client, admin_headers, corners_id, {"kind": "label", "items": [1], "label": "a"})
    warm = run_to_end(client, admin_headers, corners_id, algorithm, n_init=3, warm_start=True)
    assert warm["status"] == "succeeded", warm["error"]
    body = result(client, admin_headers, warm["id"])
    assert body["metrics"]["warm_start"] == {"from_run": first["id"], "continued": True}
    assert len(body["cost_history"]) == body["cluster_params"]["n_iter"]  # no fresh start
    assert _same_split(np.asarray(body["labels"]), np.asarray(kept["labels"]))
    assert body["cluster_params"]["agreement"] == 1.0
