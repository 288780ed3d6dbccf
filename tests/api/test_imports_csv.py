"""CSV imported by reference (a file, or a directory of files sharing one header): counted at
inspection, read by byte range between row marks; ids, classes and expert labels from named
columns; a bad cell deep in the file fails the dataset naming file, row and column; compressed
CSV and mismatched headers are refused registering nothing; a changed file is refused by name
and read again by a sync; on S3 no credential is ever answered."""

import csv
import gzip
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sqlalchemy.orm import Session

from app.store.sources import csv_source
from tests.api.test_image_featurization import wait_ready
from tests.api.test_imports import SECRET, file_client, post_import, s3_server, shared, synced
from tests.api.test_runs import start, wait
from tests.conftest import admin_project, row_counts
from tests.store.s3_server import S3Server

pytestmark = pytest.mark.db
__all__ = ["file_client", "s3_server", "shared"]  # fixtures shared with test_imports.py

HEADER = ["id", "f0", "kind", "f1", "expert", "f2"]  # features between text columns
FEATURES = ["f0", "f1", "f2"]
QUOTED = 1_234  # the row whose id holds a comma (so it is quoted)


def rows_of(n: int, seed: int = 5) -> tuple[list[list[str]], np.ndarray, np.ndarray]:
    """Rows of well-separated blobs as text, the values as parsed back (float64) and classes."""
    X, y = make_blobs(n, n_features=3, centers=3, cluster_std=0.7, random_state=seed)
    rows: list[list[str]] = []
    for i in range(n):
        f0, f1, f2 = (f"{v:.6f}" for v in X[i])
        identity = f"item,{i}" if i == QUOTED else f"item-{i}"
        label = f"e{y[i]}" if i % 7 == 0 else ""  # an empty cell: unlabeled
        rows.append([identity, f0, f"k{y[i]}", f1, label, f2])
    values = np.array([[float(r[1]), float(r[3]), float(r[5])] for r in rows])
    return rows, values, y


def write_csv(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path.read_bytes()


def ids(n: int) -> list[str]:
    return [f"item,{i}" if i == QUOTED else f"item-{i}" for i in range(n)]


def ready(client: TestClient, headers: dict[str, str], response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    dataset: dict[str, Any] = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "ready", dataset
    return dataset


def features(client: TestClient, headers: dict[str, str], dataset_id: int) -> np.ndarray:
    exported = client.get(f"/api/v1/datasets/{dataset_id}/features", headers=headers)
    assert exported.status_code == 200, exported.text
    return np.load(io.BytesIO(exported.content))


def page(
    client: TestClient, headers: dict[str, str], dataset_id: int, offset: int, limit: int
) -> list[dict[str, Any]]:
    response = client.get(
        f"/api/v1/datasets/{dataset_id}/items",
        params={"offset": offset, "limit": limit},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def named(**body: Any) -> dict[str, Any]:
    return {"id_column": "id", "ground_truth_column": "kind", **body}


def test_a_csv_is_read_by_byte_ranges_with_ids_classes_labels_and_clusters(
    file_client: TestClient, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    rows, X, y = rows_of(3_000)
    path = shared / "cells.csv"
    data = write_csv(path, rows)
    assert data.count(b"\r\n") == 3_001 and b'"item,1234"' in data
    # Small marks, so that pages are real byte ranges; a counting block ending inside quotes.
    monkeypatch.setattr(csv_source, "MARK_BYTES", 8 << 10)
    monkeypatch.setattr(csv_source, "SCAN_BYTES", data.index(b'"item,1234"') + 5)
    response = post_import(
        client, project_id, headers, name="cells", url=f"file://{path}",
        **named(label_column="expert"),
    )  # fmt: skip
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["n_items"] == 3_000 and made["feature_names"] == FEATURES
    assert made["status"] == "featurizing" and made["label_column"] == "expert"
    source = made["meta"]["source"]
    assert source["format"] == "csv" and len(source["files"][0]["csv"]["marks"]) > 10

    dataset = ready(client, headers, response)
    assert dataset["ground_truth_classes"] == ["k0", "k1", "k2"]
    items = page(client, headers, dataset["id"], QUOTED - 3, 6)
    assert [i["id"] for i in items] == ids(3_000)[QUOTED - 3 : QUOTED + 3]
    assert [i["ground_truth"] for i in items] == [f"k{c}" for c in y[QUOTED - 3 : QUOTED + 3]]
    np.testing.assert_array_equal([i["values"] for i in items], X[QUOTED - 3 : QUOTED + 3])
    assert [i["id"] for i in page(client, headers, dataset["id"], 2_995, 10)] == [
        f"item-{i}" for i in range(2_995, 3_000)
    ]
    np.testing.assert_array_equal(features(client, headers, dataset["id"]), X)

    annotations = client.get(f"/api/v1/datasets/{dataset['id']}/annotations", headers=headers)
    assert annotations.status_code == 200, annotations.text
    found = {a["payload"]["label"]: a["payload"]["items"] for a in annotations.json()["items"]}
    assert found == {f"e{c}": [i for i in range(0, 3_000, 7) if y[i] == c] for c in range(3)}
    assert dataset["revision"] == 1

    run = start(client, headers, dataset["id"], "cec", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    finished = wait(client, headers, run.json()["id"])
    assert finished["status"] == "succeeded", finished
    result = client.get(f"/api/v1/runs/{finished['id']}/result", headers=headers).json()
    assert result["metrics"]["ari"] > 0.95, result["metrics"]


def test_a_directory_of_csv_files_is_one_table_and_another_header_is_refused(
    file_client: TestClient, shared: Path, session: Session
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    rows, X, _ = rows_of(2_000)
    for name, a, b in (("a.csv", 0, 500), ("b.csv", 500, 1_200), ("c.csv", 1_200, 2_000)):
        write_csv(shared / "parts" / name, rows[a:b])
    response = post_import(
        client, project_id, headers, name="parts", url=f"file://{shared}/parts/", **named()
    )
    assert response.status_code == 201, response.text
    assert response.json()["n_items"] == 2_000 and response.json()["feature_names"] == FEATURES
    files = response.json()["meta"]["source"]["files"]
    assert [(Path(f["url"]).name, f["rows"]) for f in files] == [
        ("a.csv", 500), ("b.csv", 700), ("c.csv", 800)
    ]  # fmt: skip
    dataset = ready(client, headers, response)
    items = page(client, headers, dataset["id"], 1_195, 10)  # across b.csv's end
    assert [i["id"] for i in items] == [f"item-{i}" for i in range(1_195, 1_205)]
    np.testing.assert_array_equal(features(client, headers, dataset["id"]), X)

    write_csv(shared / "mixed" / "a.csv", rows[:100])
    write_csv(shared / "mixed" / "b.csv", rows[100:200], [*HEADER[:-1], "g2"])
    write_csv(shared / "mixed" / "c.csv", rows[200:300])
    before = row_counts(session)
    refused = post_import(client, project_id, headers, name="m", url=f"file://{shared}/mixed/")
    assert 400 <= refused.status_code < 500, refused.text
    assert f"{shared}/mixed/b.csv has another header" in refused.text, refused.text
    assert row_counts(session) == before


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ((3_000,), "cells.csv: row 2500, column 'f1' is 'oops', not a number"),
        # Table row 2500 is c.csv's row 500: the table's row, as for Parquet (`values.at`).
        ((1_000, 1_000, 1_000), "c.csv: row 2500 (row 500 of this file), column 'f1'"),
    ],
)
def test_a_cell_not_a_number_deep_in_the_file_fails_the_dataset_naming_file_row_column(
    file_client: TestClient, shared: Path, parts: tuple[int, ...], words: str
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    rows, _, _ = rows_of(3_000)
    rows[2_500][3] = "oops"  # f1, far beyond the sampled first 1,000 rows
    if len(parts) == 1:
        write_csv(shared / "cells.csv", rows)
        url = f"file://{shared}/cells.csv"
    else:
        for k, name in enumerate(("a.csv", "b.csv", "c.csv")):
            write_csv(shared / "parts" / name, rows[k * 1_000 : (k + 1) * 1_000])
        url = f"file://{shared}/parts/"
    response = post_import(client, project_id, headers, name="bad", url=url, **named())
    assert response.status_code == 201, response.text
    assert response.json()["n_items"] == 3_000
    dataset = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "failed", dataset
    error = dataset["featurization"]["error"]
    assert words in error, error
    refused = start(client, headers, dataset["id"], "cec", n_clusters=3)
    assert refused.status_code == 409 and "could not be read" in refused.text, refused.text


@pytest.mark.parametrize("url", ["t.csv.gz", "packed/"])
def test_a_compressed_csv_is_refused_and_registers_nothing(
    file_client: TestClient, shared: Path, session: Session, url: str
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    packed = gzip.compress(b"a,b\r\n1,2\r\n3,4\r\n")
    (shared / "t.csv.gz").write_bytes(packed)
    (shared / "packed").mkdir()
    (shared / "packed" / "p.csv.gz").write_bytes(packed)
    before = row_counts(session)
    response = post_import(client, project_id, headers, name="z", url=f"file://{shared}/{url}")
    assert 400 <= response.status_code < 500, response.text
    assert "compressed" in response.text, response.text
    assert row_counts(session) == before


def test_a_changed_csv_is_refused_by_name_and_read_again_by_a_sync(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    rows, X, _ = rows_of(1_500)
    path = shared / "live.csv"
    write_csv(path, rows)
    url = f"file://{path}"
    dataset = ready(
        client, headers, post_import(client, project_id, headers, name="l", url=url, **named())
    )
    np.testing.assert_array_equal(features(client, headers, dataset["id"]), X)

    rows, X, _ = rows_of(1_200, seed=9)
    write_csv(path, rows)
    os.utime(path, (2_000_000_000, 2_000_000_000))
    refused = start(client, headers, dataset["id"], "cec", n_clusters=3)
    assert refused.status_code == 409, refused.text
    assert "live.csv" in refused.text and "changed" in refused.text, refused.text

    report, synced_dataset = synced(client, headers, dataset["id"])
    assert report["changed"] == [url] and report["new"] == [] and report["deleted"] == []
    assert report["n_items_before"] == 1_500 and report["n_items"] == 1_200
    assert synced_dataset["n_items"] == 1_200
    np.testing.assert_array_equal(features(client, headers, dataset["id"]), X)
    assert page(client, headers, dataset["id"], 1_199, 5)[0]["id"] == "item-1199"
    run = start(client, headers, dataset["id"], "cec", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    assert wait(client, headers, run.json()["id"])["status"] == "succeeded"


def test_a_csv_on_s3_is_read_in_place_and_no_credential_is_answered(
    client_with: Callable[..., TestClient], s3_server: S3Server, tmp_path: Path
) -> None:
    options = s3_server.options(secret=SECRET)
    client = client_with(import_sources={f"s3://{s3_server.bucket}/csv/": options})
    headers, project_id = admin_project(client)
    rows, X, _ = rows_of(3_000)
    body = write_csv(tmp_path / "cells.csv", rows)
    s3_server.client().put_object(Bucket=s3_server.bucket, Key="csv/cells.csv", Body=body)
    url = f"s3://{s3_server.bucket}/csv/cells.csv"
    answers: list[str] = []
    response = post_import(
        client, project_id, headers, name="s3", url=url, **named(label_column="expert")
    )
    answers.append(response.text)
    dataset = ready(client, headers, response)
    assert dataset["n_items"] == 3_000 and dataset["feature_names"] == FEATURES
    assert s3_server.keys("csv/") == ["csv/cells.csv"]  # nothing written beside it
    items = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"offset": QUOTED, "limit": 3},
        headers=headers,
    )  # fmt: skip
    answers.append(items.text)
    assert [i["id"] for i in items.json()["items"]] == ids(3_000)[QUOTED : QUOTED + 3]
    np.testing.assert_array_equal(features(client, headers, dataset["id"]), X)
    labels = client.get(f"/api/v1/datasets/{dataset['id']}/annotations", headers=headers)
    answers.append(labels.text)
    assert sum(len(a["payload"]["items"]) for a in labels.json()["items"]) == 429  # 3000 / 7
    for bad in (f"s3://{s3_server.bucket}/csv/missing.csv", f"s3://{s3_server.bucket}/x.csv"):
        refused = post_import(client, project_id, headers, name="x", url=bad)
        assert 400 <= refused.status_code < 500, refused.text
        answers.append(refused.text)
    answers.append(client.get(f"/api/v1/datasets/{dataset['id']}", headers=headers).text)
    assert not any(SECRET in answer for answer in answers)
