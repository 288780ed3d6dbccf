"""Datasets imported by reference (a file:// root and a real S3 server): registered and read in
place, never copied into the store; runs, item pages and exports read the source; a changed
source is refused by name; a URL outside the operator's prefixes is refused before any request
leaves the server, and no credential ever appears in an answer."""

import io
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import StoredArray, View
from tests.api.test_image_featurization import wait_ready
from tests.api.test_runs import start, wait
from tests.conftest import admin_project, row_counts
from tests.store.s3_server import S3Server, start_server

pytestmark = pytest.mark.db

SECRET = "TOPSECRET-credential-42"


def blobs(rows: int = 3_000) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_blobs(rows, n_features=4, centers=3, cluster_std=0.7, random_state=5)
    return X.astype(np.float32), y


def write_parquet_dataset(folder: Path, X: np.ndarray, y: np.ndarray, parts: int = 3) -> None:
    """A Parquet *dataset*: ``parts`` files of one schema, with an id and a class column."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(X), parts + 1).astype(int)
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        table = pa.table(
            {
                "cell": [f"cell-{i}" for i in range(a, b)],
                **{f"f{j}": X[a:b, j] for j in range(X.shape[1])},
                "kind": [f"k{c}" for c in y[a:b]],
            }
        )
        pq.write_table(table, folder / f"part-{k:04d}.parquet", row_group_size=400)


def post_import(client: TestClient, project_id: int, headers: dict[str, str], **body: Any) -> Any:
    return client.post(f"/api/v1/projects/{project_id}/datasets/import", json=body, headers=headers)


def imported(
    client: TestClient, project_id: int, headers: dict[str, str], **body: Any
) -> dict[str, Any]:
    """Import, then wait for the background read: the dataset as it is once `ready`."""
    response = post_import(client, project_id, headers, **body)
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["status"] == "featurizing" and made["featurization"]["reads_source"]
    dataset = wait_ready(client, headers, made["id"])
    assert dataset["status"] == "ready", dataset
    return dataset


def synced(
    client: TestClient, headers: dict[str, str], dataset_id: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sync a changed source, then wait for its background read: what the 202 said, and the
    dataset once `ready` again."""
    sync = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert sync.status_code == 202, sync.text
    report = sync.json()
    assert report["dataset"]["status"] == "featurizing", report
    assert report["dataset"]["featurization"]["syncing"], report
    dataset = wait_ready(client, headers, dataset_id)
    assert dataset["status"] == "ready", dataset
    last = dataset["featurization"]["last_sync"]
    assert last["error"] is None and not dataset["featurization"]["syncing"], dataset
    assert {k: last[k] for k in ("new", "changed", "deleted", "n_items")} == {
        k: report[k] for k in ("new", "changed", "deleted", "n_items")
    }
    return report, dataset


def hold_reads(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> tuple[threading.Event, threading.Event]:
    """Background reads of sources wait, once started (`started` set), until `release` is."""
    from app.services import source_reading

    started, release = threading.Event(), threading.Event()
    real = source_reading.read_imported_table

    def held(*args: Any) -> Any:
        started.set()
        release.wait(30)
        return real(*args)

    executor = client.app.state.executor  # type: ignore[attr-defined]
    monkeypatch.setattr(executor, "read_table", held)
    return started, release


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """A real S3 endpoint (moto, HTTP on 127.0.0.1) with an empty bucket."""
    server, s3 = start_server()
    try:
        yield s3
    finally:
        server.stop()


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    root.mkdir()
    return root


@pytest.fixture
def file_client(client_with: Callable[..., TestClient], shared: Path) -> TestClient:
    return client_with(import_sources={f"file://{shared}/": {}})


def test_a_parquet_dataset_is_read_in_place_by_pages_runs_and_exports(
    file_client: TestClient, shared: Path, session: Session
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    X, y = blobs()
    write_parquet_dataset(shared / "cells", X, y)
    dataset = imported(
        client, project_id, headers, name="cells", url=f"file://{shared}/cells/",
        id_column="cell", ground_truth_column="kind",
    )  # fmt: skip
    assert dataset["n_items"] == len(X) and dataset["feature_names"] == ["f0", "f1", "f2", "f3"]
    assert dataset["ground_truth_classes"] == ["k0", "k1", "k2"]
    source = dataset["meta"]["source"]
    assert [Path(f["url"]).name for f in source["files"]] == [
        "part-0000.parquet", "part-0001.parquet", "part-0002.parquet"
    ]  # fmt: skip
    # Nothing of the values is in the store: no features array was written.
    session.expire_all()
    kinds = set(
        session.scalars(select(StoredArray.kind).where(StoredArray.dataset_id == dataset["id"]))
    )
    assert "features" not in kinds and "ground_truth" in kinds

    page = client.get(
        f"/api/v1/datasets/{dataset['id']}/items",
        params={"offset": 990, "limit": 20},  # across the first file's end
        headers=headers,
    ).json()["items"]
    assert [item["id"] for item in page] == [f"cell-{i}" for i in range(990, 1010)]
    np.testing.assert_allclose([item["values"] for item in page], X[990:1010], rtol=1e-6)

    exported = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=headers)
    assert exported.status_code == 200
    np.testing.assert_array_equal(np.load(io.BytesIO(exported.content)), X)

    run = start(client, headers, dataset["id"], "cec", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    finished = wait(client, headers, run.json()["id"])
    assert finished["status"] == "succeeded", finished
    result = client.get(f"/api/v1/runs/{finished['id']}/result", headers=headers).json()
    assert result["metrics"]["ari"] > 0.99

    # The source changes under it: runs and exports refuse, naming the object.
    changed = shared / "cells" / "part-0001.parquet"
    write_parquet_dataset(shared / "elsewhere", X[::-1].copy(), y[::-1].copy())
    changed.write_bytes((shared / "elsewhere" / "part-0001.parquet").read_bytes())
    os.utime(changed, (1_000_000_000, 1_000_000_000))
    refused = start(client, headers, dataset["id"], "cec", n_clusters=3)
    assert refused.status_code == 409, refused.text
    assert "part-0001.parquet" in refused.text and "changed" in refused.text
    export = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=headers)
    assert export.status_code == 409 and "part-0001.parquet" in export.text


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("file:///etc/passwd", "no configured source"),
        ("file://{shared}/../outside.parquet", ".."),
        ("http://169.254.169.254/latest/meta-data/", "scheme"),
        ("s3://someone-else/data.parquet", "no configured source"),
        ("file://{shared}/missing.parquet", "missing.parquet"),
        ("file://{shared}/table.csv.gz", "compressed"),
        ("file://{shared}/text.parquet", "'label'"),
    ],
)
def test_what_cannot_be_imported_is_refused_and_registers_nothing(
    file_client: TestClient, shared: Path, session: Session, url: str, words: str
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    (shared / "table.csv.gz").write_bytes(b"\x1f\x8b not read")
    pq.write_table(pa.table({"x": [1.0, 2.0], "label": ["a", "b"]}), shared / "text.parquet")
    before = row_counts(session)
    body: dict[str, Any] = {"name": "bad", "url": url.format(shared=shared)}
    if "text.parquet" in url:
        body["columns"] = ["x", "label"]
    response = post_import(client, project_id, headers, **body)
    assert 400 <= response.status_code < 500, response.text
    assert words.lower() in response.text.lower(), response.text
    session.expire_all()
    assert row_counts(session) == before


def test_import_is_off_until_an_operator_opens_a_prefix(client: TestClient) -> None:
    headers, project_id = admin_project(client)
    response = post_import(client, project_id, headers, name="x", url="file:///tmp/x.parquet")
    assert response.status_code == 422
    assert "IMPORT_SOURCES" in response.text


def test_an_npy_on_s3_is_read_in_place_and_no_credential_is_ever_answered(
    client_with: Callable[..., TestClient], s3_server: S3Server
) -> None:
    options = s3_server.options(secret=SECRET)  # moto takes any secret
    client = client_with(import_sources={f"s3://{s3_server.bucket}/imports/": options})
    headers, project_id = admin_project(client)
    X, _ = blobs(2_000)
    buffer = io.BytesIO()
    np.save(buffer, X)
    s3_server.client().put_object(
        Bucket=s3_server.bucket, Key="imports/blobs.npy", Body=buffer.getvalue()
    )
    answers = []
    response = post_import(
        client, project_id, headers, name="blobs", url=f"s3://{s3_server.bucket}/imports/blobs.npy"
    )
    answers.append(response.text)
    assert response.status_code == 201, response.text
    dataset = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "ready", dataset
    assert dataset["n_items"] == 2_000 and dataset["n_features"] == 4
    assert s3_server.keys("imports/") == ["imports/blobs.npy"]  # nothing written beside it
    page = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"offset": 1_500, "limit": 5},
        headers=headers,
    )  # fmt: skip
    answers.append(page.text)
    np.testing.assert_allclose([i["values"] for i in page.json()["items"]], X[1_500:1_505])
    for url in (
        f"s3://{s3_server.bucket}/imports/missing.npy",
        f"s3://{s3_server.bucket}/other/blobs.npy",
    ):
        answers.append(post_import(client, project_id, headers, name="x", url=url).text)
    answers.append(client.get(f"/api/v1/datasets/{dataset['id']}", headers=headers).text)
    assert not any(SECRET in answer for answer in answers)


def test_a_source_gone_during_a_run_fails_the_run_saying_so_and_the_store_stays_healthy(
    file_client: TestClient, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The object goes between the run's start (checked) and its read: the run fails with
    the object named; the health of the store (ours) is not the source's (the user's)."""
    from app.services import runs as run_service

    client = file_client
    headers, project_id = admin_project(client)
    X, _ = blobs(600)
    path = shared / "blobs.npy"
    np.save(path, X)
    dataset = imported(client, project_id, headers, name="b", url=f"file://{path}")
    path.unlink()
    monkeypatch.setattr(run_service, "require_unchanged", lambda *_: None)  # checked earlier
    run = start(client, headers, dataset["id"], "cec", n_clusters=3)
    assert run.status_code in (200, 201, 202), run.text
    finished = wait(client, headers, run.json()["id"])
    assert finished["status"] == "failed"
    assert "blobs.npy" in finished["error"], finished["error"]
    health = client.get("/api/v1/health").json()
    assert health["array_store"]["status"] == "ok"


def test_no_credential_in_any_log_line(
    client_with: Callable[..., TestClient],
    s3_server: S3Server,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    options = s3_server.options(secret=SECRET)
    client = client_with(import_sources={f"s3://{s3_server.bucket}/logs/": options})
    headers, project_id = admin_project(client)
    s3_server.client().put_object(Bucket=s3_server.bucket, Key="logs/bad.npy", Body=b"not npy")
    for url in (
        f"s3://{s3_server.bucket}/logs/bad.npy",
        f"s3://{s3_server.bucket}/logs/missing.parquet",
        f"s3://{s3_server.bucket}/elsewhere.npy",
    ):
        response = post_import(client, project_id, headers, name="x", url=url)
        assert 400 <= response.status_code < 500, response.text
    assert SECRET not in caplog.text


def test_an_item_page_of_a_changed_source_is_refused_not_an_error(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    X, _ = blobs(600)
    path = shared / "pages.npy"
    np.save(path, X)
    dataset = imported(client, project_id, headers, name="p", url=f"file://{path}")
    np.save(path, X[:300])  # fewer rows now
    page = client.get(f"/api/v1/datasets/{dataset['id']}/items", headers=headers)
    assert page.status_code == 409, page.text
    assert "pages.npy" in page.text


def test_sync_says_what_changed_and_reads_the_source_again(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    X, y = blobs(1_200)
    folder = shared / "synced"
    write_parquet_dataset(folder, X, y)
    dataset_id = imported(
        client, project_id, headers, name="s", url=f"file://{folder}/", id_column="cell",
        ground_truth_column="kind",
    )["id"]  # fmt: skip
    sync = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert sync.status_code == 200, sync.text
    assert sync.json()["changed"] == [] and sync.json()["n_items"] == 1_200

    # Values change, rows do not: said, read again, runs go on.
    changed = X.copy()
    changed[400:800] += 100.0
    write_parquet_dataset(shared / "next", changed, y)
    target = folder / "part-0001.parquet"
    target.write_bytes((shared / "next" / "part-0001.parquet").read_bytes())
    os.utime(target, (2_000_000_000, 2_000_000_000))
    assert start(client, headers, dataset_id, "cec", n_clusters=3).status_code == 409
    report, _ = synced(client, headers, dataset_id)
    assert [Path(u).name for u in report["changed"]] == ["part-0001.parquet"]
    assert report["new"] == [] and report["deleted"] == [] and report["n_items"] == 1_200
    exported = client.get(f"/api/v1/datasets/{dataset_id}/features", headers=headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(exported.content)), changed)
    run = start(client, headers, dataset_id, "cec", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text

    # Rows added after the recorded objects (the folder grows): no row moves, so annotations
    # keep their items and the sync goes on.
    labelled = client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [0, 1], "label": "T"},
        headers=headers,
    )
    assert labelled.status_code == 201, labelled.text
    more, more_y = blobs(1_500)
    pq.write_table(
        pa.table(
            {
                "cell": [f"extra-{i}" for i in range(300)],
                **{f"f{j}": more[1_200:, j] for j in range(4)},
                "kind": [f"k{c}" for c in more_y[1_200:]],
            }
        ),
        folder / "part-0003.parquet",
    )
    report, _ = synced(client, headers, dataset_id)
    assert [Path(u).name for u in report["new"]] == ["part-0003.parquet"]
    assert report["n_items_before"] == 1_200 and report["n_items"] == 1_500
    page = client.get(
        f"/api/v1/datasets/{dataset_id}/items", params={"offset": 1_499, "limit": 1},
        headers=headers,
    ).json()["items"]  # fmt: skip
    assert page[0]["id"] == "extra-299"
    first = client.get(
        f"/api/v1/datasets/{dataset_id}/items", params={"offset": 0, "limit": 2},
        headers=headers,
    ).json()["items"]  # fmt: skip
    assert [item["id"] for item in first] == ["cell-0", "cell-1"]

    # The first object goes: every row moves, and the label names items 0 and 1: refused,
    # naming the annotation, until it is undone.
    (folder / "part-0000.parquet").unlink()
    refused = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert refused.status_code == 409, refused.text
    assert f"annotation ids {labelled.json()['id']}" in refused.text, refused.text
    undone = client.post(f"/api/v1/datasets/{dataset_id}/annotations/undo", headers=headers)
    assert undone.status_code == 200, undone.text
    report, _ = synced(client, headers, dataset_id)
    assert [Path(u).name for u in report["deleted"]] == ["part-0000.parquet"]


def test_a_sync_answers_before_it_reads_and_a_failed_read_leaves_the_dataset_as_it_was(
    file_client: TestClient, shared: Path, monkeypatch: pytest.MonkeyPatch, session: Session
) -> None:
    """The sync's 202 comes from the objects' versions alone; the source is read in the
    background (runs and another sync wait, saying so). A read that fails (a NaN now in the
    source) leaves the dataset as before the sync, ready, with the reason naming object, row
    and column; runs stay refused until a sync reads the mended source."""
    client = file_client
    headers, project_id = admin_project(client)
    X, y = blobs(900)
    folder = shared / "mended"
    write_parquet_dataset(folder, X, y)
    before = imported(client, project_id, headers, name="m", url=f"file://{folder}/")
    dataset_id = before["id"]

    broken = X.copy()
    broken[650, 1] = np.nan  # row 50 of part-0002
    write_parquet_dataset(shared / "broken", broken, y)
    target = folder / "part-0002.parquet"
    target.write_bytes((shared / "broken" / "part-0002.parquet").read_bytes())
    os.utime(target, (2_000_000_000, 2_000_000_000))
    started, release = hold_reads(client, monkeypatch)
    counts = row_counts(session)
    sync = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert sync.status_code == 202, sync.text
    assert [Path(u).name for u in sync.json()["changed"]] == ["part-0002.parquet"]
    assert started.wait(30)
    run = start(client, headers, dataset_id, "cec", n_clusters=3)
    assert run.status_code == 409 and "being read" in run.text, run.text
    again = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert again.status_code == 409 and "being read" in again.text, again.text
    page = client.get(f"/datasets/{dataset_id}", headers=headers)
    assert "Reading its source again after a sync" in page.text
    release.set()
    after = wait_ready(client, headers, dataset_id)
    assert after["status"] == "ready", after
    error = after["featurization"]["last_sync"]["error"]
    assert "part-0002.parquet" in error and "'f1'" in error and "row 650" in error, error
    for key in ("n_items", "revision", "meta", "ground_truth_classes"):
        assert after[key] == before[key], key
    session.expire_all()
    assert row_counts(session) == counts  # the read's own view went with it
    refused = start(client, headers, dataset_id, "cec", n_clusters=3)
    assert refused.status_code == 409 and "part-0002.parquet" in refused.text, refused.text
    page = client.get(f"/datasets/{dataset_id}", headers=headers)
    assert "could not read the source again" in page.text and "row 650" in page.text

    monkeypatch.undo()
    write_parquet_dataset(shared / "fixed", X, y)
    target.write_bytes((shared / "fixed" / "part-0002.parquet").read_bytes())
    os.utime(target, (2_100_000_000, 2_100_000_000))
    _, mended = synced(client, headers, dataset_id)
    assert mended["revision"] == before["revision"] + 1
    exported = client.get(f"/api/v1/datasets/{dataset_id}/features", headers=headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(exported.content)), X)
    page = client.get(f"/datasets/{dataset_id}", headers=headers)
    assert "Synced with the source" in page.text and "1 changed" in page.text


def test_an_uploaded_dataset_has_nothing_to_sync(client: TestClient) -> None:
    headers, project_id = admin_project(client)
    from tests.conftest import upload_npy

    dataset_id = upload_npy(client, project_id, headers, np.eye(3))
    response = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert response.status_code == 422 and "not imported by reference" in response.text


def test_a_fault_only_the_values_show_fails_the_dataset_naming_object_row_and_column(
    file_client: TestClient, shared: Path
) -> None:
    """The metadata vouches for the types, not the values: a NaN deep in the third file is
    found by the background read, which fails the dataset saying where; nothing reads it."""
    client = file_client
    headers, project_id = admin_project(client)
    X, y = blobs(1_500)
    X[1_234, 2] = np.nan
    write_parquet_dataset(shared / "holes", X, y)
    response = post_import(client, project_id, headers, name="h", url=f"file://{shared}/holes/")
    assert response.status_code == 201, response.text
    dataset = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "failed"
    error = dataset["featurization"]["error"]
    assert "part-0002.parquet" in error and "'f2'" in error and "row 1234" in error, error
    items = client.get(f"/api/v1/datasets/{dataset['id']}/items", headers=headers)
    assert items.json()["items"] == []
    refused = start(client, headers, dataset["id"], "cec", n_clusters=3)
    assert refused.status_code == 409 and "could not be read" in refused.text, refused.text
    page = client.get(f"/datasets/{dataset['id']}", headers=headers)
    assert "part-0002.parquet" in page.text


def test_a_dataset_being_read_says_so_and_is_not_synced_or_run_meanwhile(
    file_client: TestClient, shared: Path, monkeypatch: pytest.MonkeyPatch, session: Session
) -> None:
    """While the background read has not run, the dataset is `featurizing`: runs and syncs
    are refused with 409 saying it is being read; its 201 came from the metadata alone."""
    client = file_client
    headers, project_id = admin_project(client)
    X, _ = blobs(600)
    np.save(shared / "later.npy", X)
    started, release = hold_reads(client, monkeypatch)
    made = post_import(client, project_id, headers, name="l", url=f"file://{shared}/later.npy")
    assert made.status_code == 201, made.text
    dataset_id = made.json()["id"]
    assert made.json()["n_items"] == 600  # from the header alone
    assert started.wait(30)
    run = start(client, headers, dataset_id, "cec", n_clusters=3)
    assert run.status_code == 409 and "being read" in run.text, run.text
    sync = client.post(f"/api/v1/datasets/{dataset_id}/sync", headers=headers)
    assert sync.status_code == 409 and "being read" in sync.text, sync.text
    page = client.get(f"/datasets/{dataset_id}", headers=headers)
    assert "Reading" in page.text
    # What a read cut short by a killed server left behind goes when it is read again.
    session.add(View(dataset_id=dataset_id, name="PCA", method="pca", params={}))
    session.commit()
    release.set()
    assert wait_ready(client, headers, dataset_id)["status"] == "ready"
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=headers).json()
    assert views["total"] == 1, views


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_an_anndata_file_is_read_in_place_with_its_cells_genes_and_classes(
    client_with: Callable[..., TestClient],
    s3_server: S3Server,
    file_client: TestClient,
    shared: Path,
    tmp_path: Path,
    layout: str,
) -> None:
    """An .h5ad file where it lies (S3 for CSR, a file:// root for dense): genes named from
    var, ids and classes from obs, pages and exports read in place; X by columns refused."""
    from scipy import sparse

    from tests.api.test_h5ad_uploads import cells, h5ad_bytes

    X, kinds = cells(1_200)
    matrix = X if layout == "dense" else sparse.csr_matrix(X)
    data = h5ad_bytes(tmp_path, matrix, kinds)
    if layout == "csr":
        client = client_with(
            import_sources={f"s3://{s3_server.bucket}/cells/": s3_server.options(secret=SECRET)}
        )
        s3_server.client().put_object(Bucket=s3_server.bucket, Key="cells/c.h5ad", Body=data)
        url = f"s3://{s3_server.bucket}/cells/c.h5ad"
    else:
        client = file_client
        (shared / "c.h5ad").write_bytes(data)
        url = f"file://{shared}/c.h5ad"
    headers, project_id = admin_project(client)
    dataset = imported(
        client, project_id, headers, name="cells", url=url, id_column="_index",
        ground_truth_column="cell_type",
    )  # fmt: skip
    assert dataset["feature_names"][:2] == ["gene0", "gene1"] and dataset["n_items"] == 1_200
    assert dataset["ground_truth_classes"] == ["type0", "type1", "type2"]
    page = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"offset": 700, "limit": 3},
        headers=headers,
    ).json()["items"]  # fmt: skip
    assert [i["id"] for i in page] == ["cell-700", "cell-701", "cell-702"]
    assert [i["ground_truth"] for i in page] == [f"type{k}" for k in kinds[700:703]]
    np.testing.assert_array_equal([i["values"] for i in page], X[700:703])
    exported = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(exported.content)), X)

    csc = h5ad_bytes(tmp_path, sparse.csc_matrix(X), kinds, name="csc.h5ad")
    if layout == "dense":
        (shared / "csc.h5ad").write_bytes(csc)
        refused = post_import(
            client, project_id, headers, name="x", url=f"file://{shared}/csc.h5ad"
        )
        assert refused.status_code == 422 and "tocsr" in refused.text, refused.text
