"""The array store on S3: a real S3 endpoint (moto in server mode, HTTP on 127.0.0.1) reached
through fsspec/s3fs and zarr's FsspecStore, as a deployment with ARRAY_STORE=s3://... would.

The store on its own (round trips, deleting, listing what another process wrote, the start-up
sweep), the whole API on it (upload, read, run, export, delete: nothing left in the bucket),
and an S3 endpoint nobody answers (the server starts, says so, and refuses writes with 503)."""

import csv
import io
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.config import Settings
from app.db.models import StoredArray
from app.main import create_app
from app.store.array_store import ArrayStore, StoreUnavailable, sweep_orphans
from app.store.transactions import store_of
from benchmarks._server import free_port
from tests.conftest import (
    ADMIN_PASSWORD,
    _empty_tables,
    admin_project,
    get_page,
    post_dataset,
    row_counts,
    token_headers,
    upload_npy,
)
from tests.store.s3_server import S3Server

pytestmark = pytest.mark.db


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def prefix() -> str:
    return unique("store")


@pytest.fixture
def store(s3_server: S3Server, prefix: str) -> ArrayStore:
    return ArrayStore(f"s3://{s3_server.bucket}/{prefix}", s3_server.options())


# -- the store on its own ---------------------------------------------------------------------


def test_round_trips_listing_and_deleting_on_s3(
    store: ArrayStore, s3_server: S3Server, prefix: str
) -> None:
    store.check()
    table = np.random.default_rng(0).normal(size=(200, 3))
    info = store.write("datasets/1-a/features", table, chunk_rows=64)
    assert (info.shape, info.dtype, info.chunk_rows) == ((200, 3), "float64", 64)
    np.testing.assert_array_equal(store.read("datasets/1-a/features"), table)
    np.testing.assert_array_equal(store.read("datasets/1-a/features", 60, 130), table[60:130])
    assert store.shape("datasets/1-a/features") == (200, 3)
    # One stored chunk at a time, the first and last cut to the range asked for.
    blocks = list(store.iter_blocks("datasets/1-a/features", 10, 150))
    assert [b.shape[0] for b in blocks] == [54, 64, 22]
    np.testing.assert_array_equal(np.concatenate(blocks), table[10:150])
    # Each chunk is its own object: 200 rows at 64 rows a chunk are four.
    chunk_keys = s3_server.keys(f"{prefix}/datasets/1-a/features/c/")
    assert len(chunk_keys) == 4

    codes = np.arange(-1, 99, dtype=np.int32)
    store.write("datasets/1-a/ground_truth", codes, chunk_rows=64)
    np.testing.assert_array_equal(store.read("datasets/1-a/ground_truth"), codes)

    ids = ["", "a", "é,ü", "x" * 300, *(f"item-{i}" for i in range(96))]
    stored = store.write_strings("datasets/1-a/item_ids", ids, chunk_rows=64)
    assert stored.shape == (100,)
    assert store.read_strings("datasets/1-a/item_ids") == ids
    assert store.read_strings("datasets/1-a/item_ids", 2, 70) == ids[2:70]

    blob = bytes(range(256)) * 50
    store.write_bytes("datasets/1-a/image", blob)
    assert store.read_bytes("datasets/1-a/image") == blob

    store.write("runs/2-b/labels", np.arange(5), chunk_rows=64)
    assert set(store.children("datasets")) == {"1-a"}
    assert set(store.children("runs")) == {"2-b"}
    assert store.children("nothing-here") == {}

    store.delete("datasets/1-a")
    assert s3_server.keys(f"{prefix}/datasets/1-a") == []
    assert store.children("datasets") == {}
    with pytest.raises(FileNotFoundError):
        store.read("datasets/1-a/features")
    store.delete("datasets/1-a")  # already gone: no error
    np.testing.assert_array_equal(store.read("runs/2-b/labels"), np.arange(5))


def test_what_another_process_writes_is_listed_and_deleted(
    store: ArrayStore, s3_server: S3Server, prefix: str
) -> None:
    # A Dask worker writes a run's arrays through its own filesystem; the API server's listing
    # of `runs/` (made at start-up, before) must not hide them when the run is deleted.
    worker = ArrayStore(store.location, s3_server.options(skip_instance_cache=True))
    store.write("runs/1-old/labels", np.arange(3), chunk_rows=3)
    assert set(store.children("runs")) == {"1-old"}
    worker.write("runs/2-new/labels", np.arange(3), chunk_rows=3)
    assert set(store.children("runs")) == {"1-old", "2-new"}
    store.delete("runs/2-new")
    assert s3_server.keys(f"{prefix}/runs/2-new") == []
    worker.delete("runs/1-old")
    assert store.children("runs") == {}


def test_start_up_sweep_keeps_a_run_being_written(
    store: ArrayStore, s3_server: S3Server, prefix: str
) -> None:
    # An S3 "directory" has no time of its own: the sweep asks its newest object instead of
    # taking a run a worker is writing right now for one a crash left behind.
    store.write("runs/7-writing/labels", np.arange(3), chunk_rows=3)
    store.write("runs/8-kept/labels", np.arange(3), chunk_rows=3)
    store.write("datasets/3-orphan/features", np.arange(3), chunk_rows=3)
    store.write("datasets/4-kept/features", np.arange(3), chunk_rows=3)
    referenced = {"runs/8-kept", "datasets/4-kept"}
    assert sweep_orphans(store, referenced, runs_older_than_s=3600) == 1
    assert set(store.children("datasets")) == {"4-kept"}
    assert set(store.children("runs")) == {"7-writing", "8-kept"}
    # Older than the limit (here: any age), an unreferenced run directory goes.
    assert sweep_orphans(store, referenced, runs_older_than_s=0) == 1
    assert set(store.children("runs")) == {"8-kept"}
    assert s3_server.keys(f"{prefix}/runs/7-writing") == []


# -- the API on S3 ----------------------------------------------------------------------------


@pytest.fixture
def s3_app(
    db_engine: Engine, settings: Settings, s3_server: S3Server
) -> Iterator[tuple[TestClient, str]]:
    """An app whose arrays live under a fresh prefix of the bucket; the client and prefix."""
    prefix = unique("api")
    s3_settings = settings.model_copy(
        update={
            "array_store": f"s3://{s3_server.bucket}/{prefix}",
            "array_store_options": s3_server.options(),
        }
    )
    with TestClient(create_app(s3_settings)) as client:
        yield client, prefix
    _empty_tables(db_engine)


def wait_for_run(client: TestClient, headers: dict[str, str], run_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        run: dict[str, Any] = client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
        if run["status"] in ("succeeded", "failed", "cancelled"):
            return run
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run['status']}"
        time.sleep(0.05)


def test_the_api_end_to_end_on_s3(s3_app: tuple[TestClient, str], s3_server: S3Server) -> None:
    client, prefix = s3_app
    health = client.get("/api/v1/health").json()
    assert health["array_store"]["status"] == "ok"
    headers, project_id = admin_project(client, "S3")

    rng = np.random.default_rng(3)
    centers = np.array([[0.0, 0.0], [8.0, 8.0], [0.0, 8.0]])
    truth = np.arange(150) % 3
    values = (centers[truth] + rng.normal(scale=0.5, size=(150, 2))).round(6)
    lines = ["key,x,y,species"] + [
        f"item-{i},{values[i, 0]},{values[i, 1]},s{truth[i]}" for i in range(150)
    ]
    upload = post_dataset(
        client,
        project_id,
        headers,
        "blobs.csv",
        "\n".join(lines).encode(),
        "text/csv",
        id_column="key",
        ground_truth_column="species",
    )
    assert upload.status_code == 201, upload.text
    dataset_id = upload.json()["id"]
    assert upload.json()["ground_truth_classes"] == ["s0", "s1", "s2"]

    matrix = np.arange(100 * 4, dtype=np.float32).reshape(100, 4)
    npy_id = upload_npy(client, project_id, headers, matrix)

    # Items across a chunk boundary (64 rows a chunk): ids, values and ground truth.
    page = get_page(client, f"/api/v1/datasets/{dataset_id}/items", headers, limit=10, offset=60)
    assert page["total"] == 150
    assert [item["id"] for item in page["items"]] == [f"item-{i}" for i in range(60, 70)]
    assert page["items"][4]["values"] == pytest.approx(values[64])
    assert page["items"][4]["ground_truth"] == f"s{truth[64]}"

    features = client.get(f"/api/v1/datasets/{dataset_id}/features", headers=headers)
    assert features.status_code == 200
    np.testing.assert_array_equal(np.load(io.BytesIO(features.content)), values)
    npy_features = client.get(f"/api/v1/datasets/{npy_id}/features", headers=headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(npy_features.content)), matrix)
    codes = client.get(f"/api/v1/datasets/{dataset_id}/ground-truth", headers=headers)
    np.testing.assert_array_equal(np.frombuffer(codes.content, dtype="<i4"), truth)

    started = client.post(
        "/api/v1/runs",
        json={
            "dataset_id": dataset_id,
            "algorithm": "cec",
            "params": {"n_clusters": 3, "n_init": 1, "covariance": "spherical"},
        },
        headers=headers,
    )
    assert started.status_code == 202, started.text
    run = wait_for_run(client, headers, started.json()["id"])
    assert run["status"] == "succeeded", run["error"]
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=headers).json()
    labels = result["labels"]
    assert len(labels) == 150 and result["metrics"]["ari"] > 0.9
    labels_npy = client.get(
        f"/api/v1/runs/{run['id']}/result", params={"format": "npy"}, headers=headers
    )
    np.testing.assert_array_equal(np.load(io.BytesIO(labels_npy.content)), labels)

    export = client.get(
        f"/api/v1/datasets/{dataset_id}/labels-clusters.csv",
        params={"run_id": run["id"]},
        headers=headers,
    )
    assert export.status_code == 200, export.text
    table = list(csv.reader(io.StringIO(export.text)))
    assert table[0] == ["item", "id", "label", "cluster"]
    assert [row[1] for row in table[1:]] == [f"item-{i}" for i in range(150)]
    assert [int(row[3]) for row in table[1:]] == labels

    # Where it all is: the dataset's directory (and its run's, should a run store arrays),
    # objects in the bucket.
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    with factory() as session:
        rows = session.scalars(select(StoredArray)).all()
        owned = {row.prefix for row in rows if row.dataset_id == dataset_id}
        owned |= {row.prefix for row in rows if row.run_id == run["id"]}
        other = {row.prefix for row in rows if row.dataset_id == npy_id}
        kinds = {row.kind for row in rows if row.dataset_id == dataset_id}
    assert {"features", "item_ids", "ground_truth"} <= kinds
    assert len({p for p in owned if p.startswith("datasets/")}) == 1 and not owned & other
    for directory in owned | other:
        assert s3_server.keys(f"{prefix}/{directory}/"), directory

    deleted = client.delete(f"/api/v1/datasets/{dataset_id}", headers=headers)
    assert deleted.status_code == 204
    for directory in owned:
        assert s3_server.keys(f"{prefix}/{directory}/") == [], directory
    for directory in other:  # the other dataset keeps its arrays
        assert s3_server.keys(f"{prefix}/{directory}/"), directory
    assert client.get(f"/api/v1/datasets/{dataset_id}", headers=headers).status_code == 404
    again = client.get(f"/api/v1/datasets/{npy_id}/features", headers=headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(again.content)), matrix)


# -- an S3 endpoint nobody answers ------------------------------------------------------------

# botocore's `retries.max_attempts` counts retries (1 = two attempts); `total_max_attempts`
# counts attempts. s3fs adds its own loop (S3FileSystem.retries, 5, not an fsspec option) on
# top, but a refused connection fails at once in each.
FAIL_FAST = {"connect_timeout": 1, "read_timeout": 1, "retries": {"total_max_attempts": 1}}


def test_an_unreachable_store_is_reported_and_refuses_uploads(
    db_engine: Engine, settings: Settings, s3_server: S3Server
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    broken = settings.model_copy(
        update={
            "array_store": f"s3://{s3_server.bucket}/x",
            "array_store_options": s3_server.options(
                endpoint_url=closed, config_kwargs=dict(FAIL_FAST)
            ),
        }
    )
    began = time.monotonic()
    try:
        with TestClient(create_app(broken)) as client:
            health = client.get("/api/v1/health")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            store_health = health.json()["array_store"]
            assert store_health["status"] == "unavailable"
            assert "127.0.0.1" in store_health["detail"]

            # The fail-fast options reached botocore (not s3fs's 5 s / 15 s and 5 attempts).
            factory = client.app.state.session_factory  # type: ignore[attr-defined]
            with factory() as session:
                config = store_of(session)._open()[1]._s3.meta.config
                assert (config.connect_timeout, config.read_timeout) == (1, 1)
                assert config.retries["total_max_attempts"] == 1

            headers = token_headers(client, "admin", ADMIN_PASSWORD)
            project = client.post("/api/v1/projects", json={"name": "P"}, headers=headers)
            assert project.status_code == 201
            with factory() as session:
                before = row_counts(session)
            buffer = io.BytesIO()
            np.save(buffer, np.ones((10, 2)))
            upload = client.post(
                f"/api/v1/projects/{project.json()['id']}/datasets",
                files={"file": ("d.npy", buffer.getvalue(), "application/octet-stream")},
                headers=headers,
            )
            assert upload.status_code == 503, upload.text
            assert upload.json()["code"] == "store_unavailable"
            with factory() as session:
                assert row_counts(session) == before
    finally:
        _empty_tables(db_engine)
    assert time.monotonic() - began < 15


def test_an_unreachable_store_raises_store_unavailable(s3_server: S3Server) -> None:
    options = s3_server.options(
        endpoint_url=f"http://127.0.0.1:{free_port()}", config_kwargs=dict(FAIL_FAST)
    )
    store = ArrayStore(f"s3://{s3_server.bucket}/x", options)
    began = time.monotonic()
    for attempt in (
        store.check,
        lambda: store.write("datasets/1-a/f", np.arange(3), chunk_rows=3),
        lambda: store.read("datasets/1-a/f"),
        lambda: store.children("datasets"),
        lambda: store.delete("datasets/1-a"),
        lambda: store.last_modified("runs/1-a"),
    ):
        with pytest.raises(StoreUnavailable):
            attempt()
    assert time.monotonic() - began < 10
