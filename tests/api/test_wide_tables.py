"""A table wider than a clustering method can model (MODEL_MAX_FEATURES columns) is modelled
through its leading principal components, stored at upload: equal to scikit-learn's PCA, said
so in the dataset's meta and in each run's metrics, and clustered as well as the columns are."""

import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.decomposition import PCA

from app.services.ingest.table_sink import MODEL_COMPONENTS
from tests.conftest import post_dataset

pytestmark = pytest.mark.db

ROWS, COLUMNS, CLUSTERS = 1_500, 150, 3


def wide_table() -> tuple[np.ndarray, np.ndarray, bytes]:
    rng = np.random.default_rng(11)
    truth = rng.integers(0, CLUSTERS, size=ROWS)
    centres = rng.normal(size=(CLUSTERS, COLUMNS)) * 1.5
    X = centres[truth] + rng.normal(size=(ROWS, COLUMNS))
    lines = [",".join([*(f"g{j}" for j in range(COLUMNS)), "cell_type"])]
    lines += [
        ",".join([*(repr(float(v)) for v in row), f"type{t}"])
        for row, t in zip(X, truth, strict=True)
    ]
    return X, truth, ("\n".join(lines) + "\n").encode()


def wait_for_run(client: TestClient, headers: dict[str, str], run_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        run: dict[str, Any] = client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
        if run["status"] in ("succeeded", "failed", "cancelled"):
            return run
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run['status']}"
        time.sleep(0.1)


def test_a_wide_table_is_modelled_through_its_principal_components(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    X, _, text = wide_table()
    response = post_dataset(
        client, project_id, admin_headers, "cells.csv", text, "text/csv",
        ground_truth_column="cell_type",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["n_features"] == COLUMNS
    model = dataset["meta"]["model_features"]
    reference = PCA(n_components=MODEL_COMPONENTS, svd_solver="full").fit(X)
    assert model["components"] == MODEL_COMPONENTS and model["of"] == COLUMNS
    assert model["explained_variance"] == pytest.approx(
        reference.explained_variance_ratio_.sum(), abs=1e-3
    )

    started = client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset["id"], "algorithm": "cec", "params": {"n_clusters": 3}},
        headers=admin_headers,
    )
    assert started.status_code in (200, 201, 202), started.text
    run = wait_for_run(client, admin_headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()
    metrics = result["metrics"]
    assert metrics["model_features"] == model
    assert metrics["ari"] > 0.95, metrics["ari"]


def test_the_stored_components_are_scikit_learns(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    """What runs see, read as a run reads it: scikit-learn's PCA scores, up to each
    component's sign."""
    from app.db.models import Dataset
    from app.store.dataset_arrays import load_model_features

    X, _, text = wide_table()
    response = post_dataset(client, project_id, admin_headers, "cells.csv", text, "text/csv")
    assert response.status_code == 201, response.text
    with client.app.state.session_factory() as session:
        dataset = session.get(Dataset, response.json()["id"])
        assert dataset is not None
        got = load_model_features(session=session, dataset=dataset)
    expected = PCA(n_components=MODEL_COMPONENTS, svd_solver="full").fit_transform(X)
    assert got.shape == expected.shape
    signs = np.sign(np.sum(got * expected, axis=0))
    # The leading components, well apart, agree closely; the last of 50 (noise directions of
    # near-equal variance) only as a subspace, so each column is checked by its own scale.
    np.testing.assert_allclose(
        got[:, :5] * signs[:5], expected[:, :5], atol=1e-3 * np.abs(expected[:, :5]).max()
    )
    residual = expected - got @ np.linalg.lstsq(got, expected, rcond=None)[0]
    assert np.abs(residual).max() < 1e-3 * np.abs(expected).max()
