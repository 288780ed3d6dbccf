"""AnnData (`.h5ad`) uploads, written as anndata writes them (its on-disk format 0.1.0: the
reader was checked against files anndata 0.12 itself wrote): X dense or CSR sparse read a block
of cells at a time, genes named from `var`, a cell's id and class from `obs` (its index, a
categorical column); X stored by columns (CSC) and files that are not AnnData refused naming
why, nothing stored."""

import io
from pathlib import Path

import h5py
import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import sparse
from sqlalchemy.orm import Session

from tests.api.test_wide_tables import wait_for_run
from tests.conftest import post_dataset, row_counts

pytestmark = pytest.mark.db


def cells(n: int = 600, genes: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, size=n)
    profiles = rng.gamma(2.0, 2.0, size=(3, genes))
    counts = rng.poisson(profiles[kinds]).astype(np.float32)
    return counts, kinds


def _strings(group: h5py.Group, name: str, values: list[str]) -> None:
    column = group.create_dataset(name, data=values, dtype=h5py.string_dtype())
    column.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})


def _frame(file: h5py.File, name: str, index: list[str]) -> h5py.Group:
    frame = file.create_group(name)
    frame.attrs.update(
        {"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"}
    )
    _strings(frame, "_index", index)
    return frame


def h5ad_bytes(tmp_path: Path, X: object, kinds: np.ndarray, name: str = "cells.h5ad") -> bytes:
    """An AnnData file as anndata writes it: X (dense, CSR or CSC), obs with the cells' names
    and a categorical cell_type, var with the genes' names."""
    n, genes = X.shape  # type: ignore[attr-defined]
    path = tmp_path / name
    with h5py.File(path, "w") as file:
        file.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        if sparse.issparse(X):
            matrix = file.create_group("X")
            matrix.attrs.update(
                {"encoding-type": X.format + "_matrix", "encoding-version": "0.1.0"}
            )
            matrix.attrs["shape"] = (n, genes)
            for part in ("data", "indices", "indptr"):
                matrix[part] = getattr(X, part)
        else:
            dense = file.create_dataset("X", data=X)
            dense.attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        obs = _frame(file, "obs", [f"cell-{i}" for i in range(n)])
        obs.attrs["column-order"] = ["cell_type"]
        types = obs.create_group("cell_type")
        types.attrs.update(
            {"encoding-type": "categorical", "encoding-version": "0.2.0", "ordered": False}
        )
        types["codes"] = np.asarray(kinds, dtype=np.int8)
        _strings(types, "categories", [f"type{k}" for k in range(int(kinds.max()) + 1)])
        var = _frame(file, "var", [f"gene{j}" for j in range(genes)])
        var.attrs["column-order"] = np.array([], dtype=h5py.string_dtype())
    return path.read_bytes()


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_an_h5ad_upload_reads_cells_genes_ids_and_classes(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    tmp_path: Path,
    layout: str,
) -> None:
    X, kinds = cells()
    data = h5ad_bytes(tmp_path, X if layout == "dense" else sparse.csr_matrix(X), kinds)
    response = post_dataset(
        client, project_id, admin_headers, "cells.h5ad", data,
        id_column="_index", ground_truth_column="cell_type",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["n_items"] == 600 and dataset["n_features"] == 40
    assert dataset["feature_names"][:3] == ["gene0", "gene1", "gene2"]
    assert dataset["dtype"] == "float32"
    assert dataset["ground_truth_classes"] == ["type0", "type1", "type2"]
    page = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"offset": 298, "limit": 4},
        headers=admin_headers,
    ).json()["items"]  # fmt: skip
    assert [item["id"] for item in page] == ["cell-298", "cell-299", "cell-300", "cell-301"]
    np.testing.assert_array_equal([item["values"] for item in page], X[298:302])
    assert [item["ground_truth"] for item in page] == [f"type{k}" for k in kinds[298:302]]
    exported = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=admin_headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(exported.content)), X)


def test_a_sparse_single_cell_table_wider_than_a_method_models_clusters_by_its_type(
    client: TestClient, project_id: int, admin_headers: dict[str, str], tmp_path: Path
) -> None:
    """2,000 genes, most counts zero (CSR): clustered through its principal components."""
    X, kinds = cells(n=900, genes=2_000, seed=3)
    data = h5ad_bytes(tmp_path, sparse.csr_matrix(X), kinds)
    response = post_dataset(
        client, project_id, admin_headers, "wide.h5ad", data, ground_truth_column="cell_type"
    )
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["meta"]["model_features"]["components"] == 50
    run = client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset["id"], "algorithm": "cec", "params": {"n_clusters": 3}},
        headers=admin_headers,
    )
    assert run.status_code in (200, 201, 202), run.text
    finished = wait_for_run(client, admin_headers, run.json()["id"])
    assert finished["status"] == "succeeded", finished
    result = client.get(f"/api/v1/runs/{finished['id']}/result", headers=admin_headers).json()
    assert result["metrics"]["ari"] > 0.9, result["metrics"]["ari"]


def test_what_cannot_be_read_by_cells_is_refused_and_nothing_stored(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    tmp_path: Path,
) -> None:
    X, kinds = cells(n=50, genes=8)
    csc = h5ad_bytes(tmp_path, sparse.csc_matrix(X), kinds, "csc.h5ad")
    no_x = tmp_path / "plain.h5"
    with h5py.File(no_x, "w") as f:
        f["other"] = np.zeros(3)
    nan = X.copy()
    nan[20, 5] = np.nan
    before = row_counts(session)
    for name, data, words in (
        ("csc.h5ad", csc, "tocsr()"),
        ("plain.h5ad", no_x.read_bytes(), "no X matrix"),
        ("nan.h5ad", h5ad_bytes(tmp_path, nan, kinds, "nan.h5ad"), "row 21"),
        ("cells.h5ad", h5ad_bytes(tmp_path, X, kinds), "obs has no column 'kind'"),
    ):
        extra = {"ground_truth_column": "kind"} if words.startswith("obs") else {}
        response = post_dataset(client, project_id, admin_headers, name, data, **extra)
        assert response.status_code == 422, (name, response.text)
        assert words in response.text, (name, response.text)
    session.expire_all()
    assert row_counts(session) == before
