"""A run's labels live in the array store (app/store/run_arrays.py): a finished run has a
`StoredArray` row of kind "labels" under runs/<run id>-<token>/, which the result, its exports,
warm starts and numbering all read; deleting the dataset removes the runs' directories too."""

import csv
import hashlib
import io
import logging
import time
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import StoredArray
from app.store.array_store import ArrayStore
from app.store.run_arrays import read_labels
from tests.api.test_run_numbering import result
from tests.api.test_runs import run_to_end, upload_csv
from tests.engine.ppc.test_warm_start import _corners, _split

pytestmark = pytest.mark.db


def _labels_row(session: Session, run_id: int) -> StoredArray:
    session.expire_all()
    rows = list(session.scalars(select(StoredArray).where(StoredArray.run_id == run_id)))
    assert [(row.kind, row.dataset_id) for row in rows] == [("labels", None)]
    return rows[0]


def _check_stored_labels(
    client: TestClient,
    headers: dict[str, str],
    session: Session,
    store_dir: Path,
    run_id: int,
    n_items: int,
) -> np.ndarray:
    """The run's labels as the store holds them, after checking that the result and both
    exports say the same."""
    row = _labels_row(session, run_id)
    assert row.prefix.startswith(f"runs/{run_id}-")
    assert (store_dir / row.prefix).is_dir()
    stored = ArrayStore(store_dir).read(row.key)
    assert stored.dtype == np.int32 and stored.shape == (n_items,)
    assert row.shape == [n_items] and row.dtype == "int32" and row.nbytes == 4 * n_items
    assert (
        row.content_hash
        == hashlib.blake2b(stored.astype("<i4").tobytes(), digest_size=16).hexdigest()
    )
    np.testing.assert_array_equal(read_labels(session=session, run_id=run_id), stored)

    body = result(client, headers, run_id)
    assert body["n_items"] == n_items
    np.testing.assert_array_equal(np.asarray(body["labels"]), stored)
    # Without the labels (the workspace reads them as NPY): the same result, labels null.
    light = client.get(f"/api/v1/runs/{run_id}/result", params={"labels": False}, headers=headers)
    assert light.status_code == 200, light.text
    assert light.json() == {**body, "labels": None}

    response = client.get(f"/api/v1/runs/{run_id}/result.csv", headers=headers)
    assert response.status_code == 200, response.text
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [int(r["item"]) for r in rows] == list(range(n_items))
    np.testing.assert_array_equal([int(r["cluster"]) for r in rows], stored)

    for response in (
        client.get(f"/api/v1/runs/{run_id}/result.npy", headers=headers),
        client.get(f"/api/v1/runs/{run_id}/result", params={"format": "npy"}, headers=headers),
    ):
        assert response.status_code == 200, response.text
        exported = np.load(io.BytesIO(response.content))
        assert exported.dtype == np.int32
        np.testing.assert_array_equal(exported, stored)
    return stored


def _directories(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.is_dir()] if path.exists() else []


def test_run_labels_are_stored_read_continued_and_deleted_with_the_dataset(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    session: Session,
    store_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    X = _corners()  # four blobs at the corners of a square, 160 items
    n = len(X)
    dataset_id = upload_csv(client, project_id, admin_headers, X, _split(X, 0))

    cec = run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=4)
    assert cec["status"] == "succeeded", cec["error"]
    cec_labels = _check_stored_labels(client, admin_headers, session, store_dir, cec["id"], n)
    assert len(set(cec_labels.tolist())) > 1

    # Plain CEC does not continue (it has no warm_start); CEC-IB continues the latest CEC-IB
    # run's partition, read back from the store. Items 0 and 40, at the corners (-4, -4) and
    # (-4, 4), named apart: two clusters.
    for item, name in ((0, "a"), (40, "b")):
        body = {"kind": "label", "items": [item], "label": name}
        response = client.post(
            f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=admin_headers
        )
        assert response.status_code == 201, response.text
    first = run_to_end(client, admin_headers, dataset_id, "cec-ib", warm_start=True)
    assert first["status"] == "succeeded", first["error"]
    metrics = result(client, admin_headers, first["id"])["metrics"]
    assert metrics["warm_start"] == {"from_run": None, "continued": False}  # no CEC-IB run yet
    assert metrics["numbered_like_run"] == cec["id"]  # numbering read the CEC run's labels
    first_labels = _check_stored_labels(client, admin_headers, session, store_dir, first["id"], n)

    warm = run_to_end(client, admin_headers, dataset_id, "cec-ib", warm_start=True)
    assert warm["status"] == "succeeded", warm["error"]
    metrics = result(client, admin_headers, warm["id"])["metrics"]
    assert metrics["warm_start"] == {"from_run": first["id"], "continued": True}
    assert metrics["numbered_like_run"] == first["id"]
    warm_labels = _check_stored_labels(client, admin_headers, session, store_dir, warm["id"], n)
    np.testing.assert_array_equal(warm_labels, first_labels)  # nothing changed: it holds

    # Three runs, three directories of their own under runs/, beside the dataset's.
    run_prefixes = {_labels_row(session, r["id"]).prefix for r in (cec, first, warm)}
    assert len(run_prefixes) == 3
    assert {f"runs/{p.name}" for p in _directories(store_dir / "runs")} == run_prefixes
    assert len(_directories(store_dir / "datasets")) == 1

    deleted_at = time.time()
    caplog.set_level(logging.DEBUG, logger="app.store")
    response = client.delete(f"/api/v1/datasets/{dataset_id}", headers=admin_headers)
    assert response.status_code == 204, response.text
    session.expire_all()
    assert session.scalars(select(StoredArray)).all() == []
    left = _directories(store_dir / "runs") + _directories(store_dir / "datasets")
    # Failed twice in CI, once on each database (not reproduced since): say what was left,
    # when, and what the store was told to remove.
    assert left == [], (
        deleted_at,
        {str(p): sorted((q.name, q.stat().st_mtime) for q in p.iterdir()) for p in left},
        [record.getMessage() for record in caplog.records],
    )


def test_deleting_the_project_removes_its_runs_directories(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    session: Session,
    store_dir: Path,
) -> None:
    X = _corners(per_blob=10)
    dataset_id = upload_csv(client, project_id, admin_headers, X)
    run = run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=4)
    assert run["status"] == "succeeded", run["error"]
    assert (store_dir / _labels_row(session, run["id"]).prefix).is_dir()

    response = client.delete(f"/api/v1/projects/{project_id}", headers=admin_headers)
    assert response.status_code == 204, response.text
    session.expire_all()
    assert session.scalars(select(StoredArray)).all() == []
    assert _directories(store_dir / "runs") == []
    assert _directories(store_dir / "datasets") == []
