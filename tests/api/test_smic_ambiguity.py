"""SMIC's ambiguous model selection (two t with nearly equal LSMI and unlike labels) reaches
the run's result as a warning through the API (issue 19), and a clear choice says nothing."""

import pytest
from fastapi.testclient import TestClient

from benchmarks.toy_data import make_toy
from tests.api.test_run_numbering import result
from tests.api.test_runs import run_to_end, upload_csv

pytestmark = pytest.mark.db


def _smic_warnings(
    client: TestClient, headers: dict[str, str], project_id: int, toy: str, seed: int, c: int
) -> list[str]:
    X, y = make_toy(toy, 200, seed)
    dataset_id = upload_csv(client, project_id, headers, X, y, toy)
    run = run_to_end(client, headers, dataset_id, "smic", n_clusters=c, random_state=seed)
    assert run["status"] == "succeeded", run["error"]
    warnings: list[str] = result(client, headers, run["id"])["metrics"]["warnings"]
    return warnings


def test_an_ambiguous_choice_of_t_is_said_in_the_result(
    client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    # High & low densities, draw 5: t = 3 and t = 5 agree to ARI 0.5 at nearly equal LSMI
    # (the engine's test_ambiguous_model_selection_warns_and_reaches_fit_warnings).
    warnings = _smic_warnings(client, admin_headers, project_id, "high_low_densities", 5, 2)
    ambiguous = [w for w in warnings if w.startswith("model selection is ambiguous")]
    assert len(ambiguous) == 1, warnings
    assert "n_neighbors=3" in ambiguous[0] and "n_neighbors=5" in ambiguous[0]
    assert "Compare both with a fixed n_neighbors" in ambiguous[0]


def test_a_clear_choice_of_t_says_nothing(
    client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    warnings = _smic_warnings(client, admin_headers, project_id, "four_blobs", 0, 4)
    assert not [w for w in warnings if "ambiguous" in w], warnings
