"""Dataset import and reading: CSV, NPY, PNG/JPEG happy paths (TIFF: test_tiff_uploads.py);
items, features, deletion."""

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
import zarr
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import StoredArray
from tests.api.test_image_featurization import wait_ready
from tests.conftest import get_page, post_dataset, row_counts

pytestmark = pytest.mark.db


def csv_bytes(header: list[str], rows: list[list[object]]) -> bytes:
    lines = [",".join(header)] + [",".join(str(v) for v in row) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def image_bytes(fmt: str, size: tuple[int, int] = (7, 5)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 60)).save(buffer, format=fmt)
    return buffer.getvalue()


def test_csv_upload_with_ids_ground_truth_and_a_text_column(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(200, 3)).round(6)
    classes = ["b", "a", "c", "10", "2"]
    rows = [[f"item-{i}", *values[i], classes[i % 5], f"note {i}"] for i in range(200)]
    body = csv_bytes(["key", "x", "y", "z", "species", "comment"], rows)
    response = post_dataset(
        client,
        project_id,
        admin_headers,
        "plants.csv",
        body,
        "text/csv",
        name="Plants",
        id_column="key",
        ground_truth_column="species",
    )
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["name"] == "Plants"
    assert dataset["kind"] == "table"
    assert (dataset["n_items"], dataset["n_features"]) == (200, 3)
    assert dataset["feature_names"] == ["x", "y", "z"]
    assert dataset["ground_truth_classes"] == ["2", "10", "a", "b", "c"]
    assert dataset["meta"]["ignored_columns"] == ["comment"]
    stats = dataset["meta"]["feature_stats"]
    assert stats[0]["mean"] == pytest.approx(values[:, 0].mean())
    assert stats[2]["std"] == pytest.approx(values[:, 2].std())

    # Items straddle chunk boundaries (the tests store 64 rows per chunk).
    page = get_page(
        client, f"/api/v1/datasets/{dataset['id']}/items", admin_headers, limit=10, offset=60
    )
    assert page["total"] == 200
    assert [item["index"] for item in page["items"]] == list(range(60, 70))
    assert page["items"][0]["id"] == "item-60"
    assert page["items"][0]["ground_truth"] == classes[0]
    assert page["items"][3]["values"] == pytest.approx(values[63])
    tail = get_page(
        client, f"/api/v1/datasets/{dataset['id']}/items", admin_headers, limit=50, offset=190
    )
    assert len(tail["items"]) == 10

    features = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=admin_headers)
    assert features.status_code == 200
    assert features.headers["content-type"] == "application/x-npy"
    np.testing.assert_array_equal(np.load(io.BytesIO(features.content)), values)


def test_csv_quirks_are_tolerated(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    # A byte-order mark, quoted headers and values, CRLF line ends, a trailing blank line.
    body = '\ufeff"a","b"\r\n"1.5",2\r\n3,-4e2\r\n\r\n'.encode()
    response = post_dataset(client, project_id, admin_headers, "q.csv", body)
    assert response.status_code == 201, response.text
    assert response.json()["feature_names"] == ["a", "b"]
    features = client.get(
        f"/api/v1/datasets/{response.json()['id']}/features", headers=admin_headers
    )
    np.testing.assert_array_equal(np.load(io.BytesIO(features.content)), [[1.5, 2], [3, -400]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_npy_upload_keeps_values_and_float32(
    client: TestClient, project_id: int, admin_headers: dict[str, str], dtype: type
) -> None:
    array = (np.arange(300 * 4).reshape(300, 4) % 97).astype(dtype)
    buffer = io.BytesIO()
    np.save(buffer, array)
    response = post_dataset(client, project_id, admin_headers, "m.npy", buffer.getvalue())
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert (dataset["n_items"], dataset["n_features"]) == (300, 4)
    assert dataset["dtype"] == ("float32" if dtype == np.float32 else "float64")
    features = client.get(f"/api/v1/datasets/{dataset['id']}/features", headers=admin_headers)
    np.testing.assert_array_equal(np.load(io.BytesIO(features.content)), array)


def test_one_dimensional_npy_is_one_feature(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.array([1.0, 2.0, 3.0]))
    response = post_dataset(client, project_id, admin_headers, "v.npy", buffer.getvalue())
    assert response.status_code == 201
    assert (response.json()["n_items"], response.json()["n_features"]) == (3, 1)


@pytest.mark.parametrize(
    ("fmt", "filename", "mime"),
    [
        ("PNG", "pic.png", "image/png"),
        ("JPEG", "pic.jpg", "image/jpeg"),
    ],
)
def test_image_upload_is_stored_and_featurized(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    fmt: str,
    filename: str,
    mime: str,
) -> None:
    content = image_bytes(fmt)
    response = post_dataset(client, project_id, admin_headers, filename, content, mime)
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["kind"] == "image"
    assert dataset["status"] == "featurizing"  # in the background, after the upload
    assert dataset["n_items"] == 35
    assert dataset["meta"]["image"] == {
        "format": fmt,
        "width": 7,
        "height": 5,
        "mode": "RGB",
        "dtype": "uint8",
        "channels": [],
        "bytes": len(content),
    }
    stored = client.get(f"/api/v1/datasets/{dataset['id']}/image", headers=admin_headers)
    assert stored.content == content
    assert stored.headers["content-type"] == mime
    ready = wait_ready(client, admin_headers, dataset["id"])
    assert ready["status"] == "ready", ready
    items = client.get(f"/api/v1/datasets/{dataset['id']}/items", headers=admin_headers)
    assert items.json()["total"] == 35


def test_datasets_are_listed_as_a_page(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    for name in ("one", "two", "three"):
        post_dataset(client, project_id, admin_headers, f"{name}.csv", b"a\n1\n2\n")
    page = get_page(
        client, f"/api/v1/projects/{project_id}/datasets", admin_headers, limit=2, offset=1
    )
    assert page["total"] == 3
    assert (page["limit"], page["offset"]) == (2, 1)
    assert [d["name"] for d in page["items"]] == ["two.csv", "three.csv"]


def test_deleting_a_dataset_removes_its_arrays(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    datasets_dir: Path,
) -> None:
    before = row_counts(session)
    created = post_dataset(client, project_id, admin_headers, "d.csv", b"a,b\n1,2\n3,4\n").json()
    assert row_counts(session)["stored_arrays"] > before["stored_arrays"]
    directories = [d for d in datasets_dir.iterdir() if d.is_dir()]
    assert len(directories) == 1 and any(directories[0].iterdir())
    response = client.delete(f"/api/v1/datasets/{created['id']}", headers=admin_headers)
    assert response.status_code == 204
    assert row_counts(session) == before
    left = [d for d in datasets_dir.iterdir() if d.is_dir()]
    assert left == []  # nothing of it stays in the store
    missing = client.get(f"/api/v1/datasets/{created['id']}", headers=admin_headers)
    assert missing.status_code == 404


def test_features_are_stored_as_row_chunks_in_the_array_store(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    store_dir: Path,
) -> None:
    array = np.random.default_rng(1).normal(size=(150, 5))
    buffer = io.BytesIO()
    np.save(buffer, array)
    post_dataset(client, project_id, admin_headers, "m.npy", buffer.getvalue())
    row = session.scalars(select(StoredArray).where(StoredArray.kind == "features")).one()
    assert (row.shape, row.dtype, row.chunk_rows) == ([150, 5], "float64", 64)
    assert row.nbytes == array.nbytes
    stored = zarr.open_array(str(store_dir / row.key), mode="r")
    # 150 rows at 64 rows per chunk: three row blocks of every column.
    assert stored.chunks == (64, 5) and stored.nchunks == 3
    np.testing.assert_array_equal(stored[:], array)
    assert row.content_hash == hashlib.blake2b(array.tobytes(), digest_size=16).hexdigest()
