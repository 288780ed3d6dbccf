"""A sync of a source that only gained objects after those read reads the added rows alone: the
statistics continue exactly (quartiles within the summary's resolution), the ids and classes
are the earlier ones followed by the new, and the view keeps its axes (earlier items stay where
the expert saw them; new ones are placed on the same axes). Compared with a fresh import of
the same folder, and with what the source was asked for."""

import io
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sqlalchemy.orm import Session

from app.store.sources.tables import SourceTable
from tests.api.test_image_featurization import wait_ready
from tests.api.test_imports import file_client, imported, shared, synced
from tests.api.test_runs import start, wait
from tests.conftest import admin_project, row_counts

__all__ = ["file_client", "shared"]

pytestmark = pytest.mark.db


def write_part(path: Path, X: np.ndarray, y: np.ndarray, first: int) -> None:
    pq.write_table(
        pa.table(
            {
                "cell": [f"cell-{first + i}" for i in range(len(X))],
                **{f"f{j}": X[:, j] for j in range(X.shape[1])},
                "kind": [f"k{c}" for c in y],
                # the expert's labels: every 10th row (table row numbers) named by its blob
                "expert": [f"e{c}" if (first + i) % 10 == 0 else None for i, c in enumerate(y)],
            }
        ),
        path,
    )


def coordinates(client: TestClient, headers: dict[str, str], dataset_id: int) -> np.ndarray:
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=headers).json()
    pca = next(v for v in views["items"] if v["method"] == "pca")
    got = client.get(
        f"/api/v1/datasets/{dataset_id}/views/{pca['id']}/coordinates",
        params={"format": "npy"},
        headers=headers,
    )
    assert got.status_code == 200, got.text
    return np.load(io.BytesIO(got.content))


def codes(client: TestClient, headers: dict[str, str], dataset_id: int) -> np.ndarray:
    got = client.get(f"/api/v1/datasets/{dataset_id}/ground-truth", headers=headers)
    assert got.status_code == 200, got.text
    return np.frombuffer(got.content, dtype="<i4")


def stats(dataset: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {s["name"]: s for s in dataset["meta"]["feature_stats"]}


def test_a_source_that_only_grew_is_read_for_its_new_rows_alone(
    file_client: TestClient,
    shared: Path,
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    X, y = make_blobs(1_700, n_features=4, centers=4, cluster_std=0.6, random_state=3)
    y[1_500:] = 4  # the added rows bring a class not seen before (and a cluster of their own)
    X[1_500:] += 8.0
    folder = shared / "growing"
    folder.mkdir()
    for k, (a, b) in enumerate([(0, 600), (600, 1_200)]):
        write_part(folder / f"part-{k}.parquet", X[a:b], y[a:b], a)
    dataset = imported(
        client, project_id, headers, name="g", url=f"file://{folder}/", id_column="cell",
        ground_truth_column="kind", label_column="expert",
    )  # fmt: skip
    dataset_id = dataset["id"]
    view_before = coordinates(client, headers, dataset_id)
    labelled = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [5, 1_100], "label": "seen"},
        headers=headers,
    )
    assert labelled.status_code == 201, labelled.text

    write_part(folder / "part-2.parquet", X[1_200:1_700], y[1_200:1_700], 1_200)
    asked: list[tuple[int, int]] = []
    read = SourceTable.read

    def recorded(table: SourceTable, start: int = 0, stop: int | None = None) -> np.ndarray:
        asked.append((start, table.n_rows if stop is None else stop))
        return read(table, start, stop)

    with mock.patch.object(SourceTable, "read", recorded):
        report, _ = synced(client, headers, dataset_id)
    assert report["n_items_before"] == 1_200 and report["n_items"] == 1_700
    assert report["rows_read"] == 500
    assert asked and min(a for a, _ in asked) >= 1_200, asked  # nothing before was read again

    fresh = imported(
        client, project_id, headers, name="fresh", url=f"file://{folder}/", id_column="cell",
        ground_truth_column="kind",
    )  # fmt: skip
    grown = client.get(f"/api/v1/datasets/{dataset_id}", headers=headers).json()
    assert grown["ground_truth_classes"] == fresh["ground_truth_classes"]
    assert grown["ground_truth_classes"] == ["k0", "k1", "k2", "k3", "k4"]
    for name, want in stats(fresh).items():
        got = stats(grown)[name]
        for key in ("min", "max", "mean", "std"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-9, err_msg=f"{name} {key}")
        for key in ("q1", "median", "q3"):  # within the 255-point summary's resolution
            assert abs(got[key] - want[key]) <= 0.02 * want["std"], (name, key, got, want)
    truth = codes(client, headers, dataset_id)
    assert len(truth) == 1_700
    np.testing.assert_array_equal(truth, codes(client, headers, fresh["id"]))
    items = client.get(
        f"/api/v1/datasets/{dataset_id}/items", params={"offset": 1_198, "limit": 4},
        headers=headers,
    ).json()["items"]  # fmt: skip
    assert [item["id"] for item in items] == [f"cell-{i}" for i in range(1_198, 1_202)]

    # The view keeps its axes: the earlier items where they were, the new ones on the same
    # axes (the linear map from the earlier rows to their coordinates places them).
    view_after = coordinates(client, headers, dataset_id)
    assert view_after.shape == (1_700, 2)
    np.testing.assert_array_equal(view_after[:1_200], view_before)
    centred = X[:1_200] - X[:1_200].mean(axis=0)
    axes = np.linalg.lstsq(centred, view_before.astype(np.float64), rcond=None)[0]
    placed = (X[1_200:] - X[:1_200].mean(axis=0)) @ axes
    np.testing.assert_allclose(view_after[1_200:], placed, atol=1e-3)

    # The label column's labels: the first rows' from the import, the added rows' from the
    # sync (one act of the user who synced), each row labelled once; the expert's own label
    # stays as it was.
    annotations = client.get(
        f"/api/v1/datasets/{dataset_id}/annotations", params={"limit": 100}, headers=headers
    ).json()["items"]  # fmt: skip
    mine = [a for a in annotations if a["payload"]["label"] == "seen"]
    assert [a["payload"]["items"] for a in mine] == [[5, 1_100]]
    from_column: dict[str, list[int]] = {}
    for a in annotations:
        if a["payload"]["label"] != "seen":
            from_column.setdefault(a["payload"]["label"], []).extend(a["payload"]["items"])
    want = {f"e{c}": sorted(np.flatnonzero((y == c) & (np.arange(1_700) % 10 == 0)).tolist())
            for c in range(5)}  # fmt: skip
    assert {k: sorted(v) for k, v in from_column.items()} == want
    run = start(client, headers, dataset_id, "cec", n_clusters=5, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    done = wait(client, headers, run.json()["id"])
    assert done["status"] == "succeeded", done
    result = client.get(f"/api/v1/runs/{done['id']}/result", headers=headers).json()
    assert result["metrics"]["ari"] > 0.9, result["metrics"]

    # A second growth continues the first (the summary kept by the appended read).
    write_part(folder / "part-3.parquet", X[:100] + 0.5, y[:100], 5_000)
    again, _ = synced(client, headers, dataset_id)
    assert again["rows_read"] == 100, again
    assert coordinates(client, headers, dataset_id).shape == (1_800, 2)


def test_an_added_object_with_an_id_seen_before_is_refused_and_changes_nothing(
    file_client: TestClient,
    shared: Path,
    session: Session,
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    X, y = make_blobs(900, n_features=3, centers=3, random_state=1)
    folder = shared / "dupes"
    folder.mkdir()
    write_part(folder / "part-0.parquet", X[:600], y[:600], 0)
    dataset = imported(
        client, project_id, headers, name="d", url=f"file://{folder}/", id_column="cell"
    )
    write_part(folder / "part-1.parquet", X[600:], y[600:], 300)  # cell-300 again
    counts = row_counts(session)
    # Found by the background read: the dataset is left as it was before the sync, ready,
    # saying why (the rows it read are still there: runs read them as before).
    sync = client.post(f"/api/v1/datasets/{dataset['id']}/sync", headers=headers)
    assert sync.status_code == 202, sync.text
    after = wait_ready(client, headers, dataset["id"])
    assert after["status"] == "ready", after
    error = after["featurization"]["last_sync"]["error"]
    assert "duplicate id 'cell-300'" in error, error
    assert after["n_items"] == 600 and after["revision"] == dataset["revision"]
    assert after["meta"]["source"] == dataset["meta"]["source"]
    assert after["meta"]["feature_stats"] == dataset["meta"]["feature_stats"]
    session.expire_all()
    assert row_counts(session) == counts
    assert coordinates(client, headers, dataset["id"]).shape == (600, 2)
    page = client.get(f"/datasets/{dataset['id']}", headers=headers)
    assert "could not read the source again" in page.text and "cell-300" in page.text


def test_a_wide_table_grows_through_its_components_and_an_older_read_is_read_whole(
    file_client: TestClient,
    shared: Path,
    session: Session,
) -> None:
    """A table of more than 100 columns: the added rows get model features on the same
    components, and a run models all of them. A dataset whose read kept no summary (read
    before summaries were kept) is read whole by the same sync."""
    from sqlalchemy import delete

    from app.db.models import StoredArray
    from app.services.ingest.appended_rows import SOURCE_AXES

    client = file_client
    headers, project_id = admin_project(client)
    X, y = make_blobs(700, n_features=120, centers=3, cluster_std=1.0, random_state=2)
    folder = shared / "wide"
    folder.mkdir()
    write_part(folder / "part-0.parquet", X[:500], y[:500], 0)
    dataset = imported(
        client, project_id, headers, name="w", url=f"file://{folder}/", id_column="cell",
        ground_truth_column="kind",
    )  # fmt: skip
    model = dataset["meta"]["model_features"]
    write_part(folder / "part-1.parquet", X[500:600], y[500:600], 500)
    report, grown = synced(client, headers, dataset["id"])
    assert report["rows_read"] == 100, report
    assert grown["meta"]["model_features"] == model
    run = start(client, headers, dataset["id"], "cec", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    done = wait(client, headers, run.json()["id"])
    assert done["status"] == "succeeded", done
    result = client.get(f"/api/v1/runs/{done['id']}/result", headers=headers).json()
    assert result["metrics"]["ari"] > 0.95, result["metrics"]

    session.execute(
        delete(StoredArray).where(
            StoredArray.dataset_id == dataset["id"], StoredArray.kind == SOURCE_AXES
        )
    )
    session.commit()
    write_part(folder / "part-2.parquet", X[600:], y[600:], 600)
    whole, _ = synced(client, headers, dataset["id"])
    assert whole["rows_read"] == 700 and whole["n_items"] == 700
