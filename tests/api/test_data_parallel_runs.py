"""Runs that fit data-parallel over the store's chunks: a table of at least
DISTRIBUTED_MIN_ITEMS items is fitted by passes over its chunks, on every worker of the Dask
executor or on the inline executor's own threads, and the run's metrics say so; a smaller
one fits in one task (loaded whole)."""

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sqlalchemy import Engine, select

from app.config import Settings
from app.db.models import Run, StoredArray
from app.jobs.run import run_inputs
from app.jobs.run.metrics import run_metrics
from app.main import create_app
from app.store.array_store import ArrayStore
from app.store.run_side_information import thaw
from tests.api.test_image_featurization import wait_ready
from tests.api.test_runs import start, upload_csv, wait
from tests.conftest import admin_project

ROWS = 6_000
CENTRES = 4


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A folder the operator opened for import by reference."""
    root = tmp_path / "shared"
    root.mkdir()
    return root


@pytest.fixture(params=["dask", "inline"])
def dask_client(
    request: pytest.FixtureRequest,
    db_engine: Engine,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    shared: Path,
) -> Iterator[TestClient]:
    """An app whose large tables fit data-parallel: on a cluster of two workers (the Dask
    executor), or on the server's own threads (the inline executor)."""
    distributed = pytest.importorskip("distributed")
    # Workers in this process (processes=False), so the test can make pass tasks small: 6
    # tasks of 1,000 rows instead of one of 524,288.
    monkeypatch.setattr(run_inputs, "ROWS_PER_TASK", 1_000)
    if request.param == "inline":
        inline_settings = settings.model_copy(
            update={
                "distributed_min_items": 5_000,
                "chunk_rows": 500,
                "import_sources": {f"file://{shared}/": {}},
            }
        )
        with TestClient(create_app(inline_settings)) as test_client:
            yield test_client
        return
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        dashboard_address=None,
        host="127.0.0.1",
    ) as cluster:
        dask_settings = settings.model_copy(
            update={
                "jobs_executor": "dask",
                "dask_scheduler": cluster.scheduler_address,
                "distributed_min_items": 5_000,
                "chunk_rows": 500,
                "import_sources": {f"file://{shared}/": {}},
            }
        )
        with TestClient(create_app(dask_settings)) as test_client:
            yield test_client


def _blobs(rows: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_blobs(rows, n_features=3, centers=CENTRES, cluster_std=0.6, random_state=3)
    return X, y


def _blobs_table(client: TestClient) -> tuple[dict[str, str], int, np.ndarray]:
    """A table of ROWS blobs in a project of the admin's: the admin's headers, its id, the
    blobs' classes."""
    headers, project_id = admin_project(client)
    X, y = _blobs(ROWS)
    return headers, upload_csv(client, project_id, headers, X, y), y


def _result(client: TestClient, headers: dict[str, str], run_id: int) -> dict:
    run = wait(client, headers, run_id, timeout=240)
    assert run["status"] == "succeeded", run["error"]
    response = client.get(f"/api/v1/runs/{run_id}/result", headers=headers)
    return response.json()


def test_a_large_table_fits_data_parallel_and_a_small_one_in_one_task(
    dask_client: TestClient,
) -> None:
    headers, project_id = admin_project(dask_client)
    X, y = _blobs(ROWS)
    large = upload_csv(dask_client, project_id, headers, X, y, name="large")
    small = upload_csv(dask_client, project_id, headers, X[:1_000], y[:1_000], name="small")

    run = start(dask_client, headers, large, "cec", n_clusters=CENTRES, n_init=2, random_state=0)
    result = _result(dask_client, headers, run.json()["id"])
    execution = result["metrics"]["execution"]
    assert execution["execution"] == "data-parallel"
    assert execution["chunks"] == ROWS // 1_000
    assert execution["passes"] >= 1
    assert len(result["labels"]) == ROWS
    assert adjusted_rand_score(y, result["labels"]) > 0.99
    assert result["metrics"]["ari"] > 0.99

    run = start(dask_client, headers, small, "cec", n_clusters=CENTRES, n_init=2, random_state=0)
    result = _result(dask_client, headers, run.json()["id"])
    assert "execution" not in result["metrics"]
    assert adjusted_rand_score(y[:1_000], result["labels"]) > 0.99


def test_cec_ib_takes_the_expert_labels_into_a_data_parallel_fit(
    dask_client: TestClient,
) -> None:
    headers, dataset, y = _blobs_table(dask_client)
    rng = np.random.RandomState(0)
    for centre in range(CENTRES):
        items = rng.choice(np.flatnonzero(y == centre), 30, replace=False)
        body = {"kind": "label", "items": items.tolist(), "label": f"blob {centre}"}
        response = dask_client.post(
            f"/api/v1/datasets/{dataset}/annotations", json=body, headers=headers
        )
        assert response.status_code == 201, response.text
    run = start(dask_client, headers, dataset, "cec-ib", n_clusters=CENTRES, random_state=0)
    result = _result(dask_client, headers, run.json()["id"])
    assert result["metrics"]["execution"]["execution"] == "data-parallel"
    assert adjusted_rand_score(y, result["labels"]) > 0.99
    assert result["cluster_params"]["agreement"] == 1.0
    assert result["metrics"]["execution"]["start"] == "sample fit"

    # One more label act, then a warm start: the data-parallel fit continues the earlier
    # mixture from its first pass (no sample fit) and keeps the partition.
    more = {"kind": "label", "items": [int(np.flatnonzero(y == 0)[99])], "label": "blob 0"}
    added = dask_client.post(f"/api/v1/datasets/{dataset}/annotations", json=more, headers=headers)
    assert added.status_code == 201, added.text
    warm = start(
        dask_client, headers, dataset, "cec-ib", n_clusters=CENTRES, random_state=0,
        warm_start=True,
    )  # fmt: skip
    again = _result(dask_client, headers, warm.json()["id"])
    assert again["metrics"]["warm_start"] == {"from_run": run.json()["id"], "continued": True}
    assert again["metrics"]["execution"]["start"] == "continued"
    assert again["metrics"]["execution"]["passes"] <= result["metrics"]["execution"]["passes"]
    assert adjusted_rand_score(result["labels"], again["labels"]) == 1.0


def test_ppc_resolves_links_across_chunks_in_a_data_parallel_fit(
    dask_client: TestClient,
) -> None:
    """Must-links and cannot-links between items of different store chunks, and labels: the
    relations are solved in their relation group, every hard one holds in the run's labels."""
    headers, dataset, y = _blobs_table(dask_client)
    rng = np.random.RandomState(1)
    first, last = np.flatnonzero(y == 0)[:3], np.flatnonzero(y == 0)[-3:]  # chunk 0 and 5
    other = np.flatnonzero(y == 1)[-2:]
    bodies = [
        {"kind": "must_link", "items": [int(first[0]), int(last[0])]},
        {"kind": "must_link", "items": [int(first[1]), int(last[1]), int(last[2])]},
        {"kind": "cannot_link", "items_a": [int(first[2])], "items_b": other.tolist()},
    ]
    for centre in range(CENTRES):
        items = rng.choice(np.flatnonzero(y == centre), 10, replace=False)
        bodies.append({"kind": "label", "items": items.tolist(), "label": f"blob {centre}"})
    for body in bodies:
        response = dask_client.post(
            f"/api/v1/datasets/{dataset}/annotations", json=body, headers=headers
        )
        assert response.status_code == 201, response.text
    run = start(dask_client, headers, dataset, "ppc", n_components=CENTRES, random_state=0)
    result = _result(dask_client, headers, run.json()["id"])
    execution = result["metrics"]["execution"]
    assert execution["execution"] == "data-parallel"
    assert execution["relation_groups"] >= 1
    assert execution["related_rows"] == 8
    labels = np.asarray(result["labels"])
    assert labels[first[0]] == labels[last[0]]
    assert labels[first[1]] == labels[last[1]] == labels[last[2]]
    assert labels[first[2]] not in set(labels[other])
    assert adjusted_rand_score(y, labels) > 0.99


def test_a_table_read_in_place_fits_data_parallel_each_task_reading_its_own_rows(
    dask_client: TestClient, shared: Path
) -> None:
    """A Parquet dataset imported by reference: the workers' tasks read their rows from the
    source itself (nothing of it is in the store), with the same labels' quality."""
    headers, project_id = admin_project(dask_client)
    X, y = _blobs(ROWS)
    folder = shared / "blobs"
    folder.mkdir()
    for k, part in enumerate(np.array_split(np.arange(ROWS), 4)):
        pq.write_table(
            pa.table({f"f{j}": X[part, j] for j in range(X.shape[1])}),
            folder / f"part-{k}.parquet",
            row_group_size=700,
        )
    imported = dask_client.post(
        f"/api/v1/projects/{project_id}/datasets/import",
        json={"name": "blobs", "url": f"file://{folder}/"},
        headers=headers,
    )
    assert imported.status_code == 201, imported.text
    # Read once in the background, on a worker (the reader travels to it by name).
    assert wait_ready(dask_client, headers, imported.json()["id"])["status"] == "ready"
    run = start(
        dask_client, headers, imported.json()["id"], "cec", n_clusters=CENTRES, n_init=2,
        random_state=0,
    )  # fmt: skip
    result = _result(dask_client, headers, run.json()["id"])
    assert result["metrics"]["execution"]["execution"] == "data-parallel"
    assert adjusted_rand_score(y, result["labels"]) > 0.99


def test_a_data_parallel_run_is_measured_and_numbered_where_its_labels_are(
    dask_client: TestClient,
) -> None:
    """The measures summed from the chunks' tables are those of the labels as stored, the
    labels are written chunk by chunk by the tasks, and a second run is numbered like the
    first from the chunks' overlap tables."""
    headers, dataset, y = _blobs_table(dask_client)
    url = f"/api/v1/datasets/{dataset}/annotations"
    rng = np.random.RandomState(2)
    bodies: list[dict] = [
        {"kind": "label", "items": rng.choice(np.flatnonzero(y == c), 12, replace=False).tolist(),
         "label": f"blob {c}"}
        for c in range(CENTRES)
    ]  # fmt: skip
    zeros, ones = np.flatnonzero(y == 0), np.flatnonzero(y == 1)
    bodies.append({"kind": "must_link", "items": [int(zeros[0]), int(zeros[-1])]})
    bodies.append({"kind": "cannot_link", "items_a": [int(zeros[1])], "items_b": [int(ones[-1])]})
    for body in bodies:
        assert dask_client.post(url, json=body, headers=headers).status_code == 201

    first = start(dask_client, headers, dataset, "cec-ib", n_clusters=CENTRES, random_state=0)
    first_id = first.json()["id"]
    result = _result(dask_client, headers, first_id)
    assert result["metrics"]["execution"]["execution"] == "data-parallel"
    labels = np.asarray(result["labels"], dtype=np.int32)

    factory = dask_client.app.state.session_factory  # type: ignore[attr-defined]
    with factory() as session:
        run = session.get(Run, first_id)
        assert run is not None
        info = thaw(session=session, run=run)
        row = session.scalars(select(StoredArray).where(StoredArray.run_id == first_id)).one()
        stored = ArrayStore(dask_client.app.state.settings.array_store).read(row.key)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(stored, labels)
    assert row.chunk_rows == 1_000  # one stored chunk per task: each wrote its own
    assert row.content_hash == hashlib.blake2b(labels.tobytes(), digest_size=16).hexdigest()

    expected = run_metrics(labels, info, y.astype(np.int32))
    for key in ("n_clusters", "cluster_sizes", "cluster_labels", "pair_constraints"):
        assert result["metrics"][key] == expected[key], key
    for key in ("ari", "nmi", "label_purity"):
        assert result["metrics"][key] == pytest.approx(expected[key], abs=1e-12), key
    assert result["metrics"]["label_pairs"] == pytest.approx(expected["label_pairs"])
    assert result["metrics"]["pair_constraints"]["must_link"] == 1.0

    second = start(dask_client, headers, dataset, "cec", n_clusters=CENTRES, random_state=5)
    again = _result(dask_client, headers, second.json()["id"])
    assert again["metrics"]["execution"]["execution"] == "data-parallel"
    assert again["metrics"]["numbered_like_run"] == first_id
    relabelled = np.asarray(again["labels"])
    assert (relabelled == labels).mean() > 0.99  # the same blobs keep their numbers
    order = np.asarray(again["metrics"]["cluster_order"])
    assert sorted(order.tolist()) == list(range(len(order)))
