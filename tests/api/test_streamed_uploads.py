"""Uploads stream through the table sink: refusals far into a file name their row and leave
nothing behind; Parquet is a format of its own; what is derived from the whole table (the
PCA view, the feature statistics, the class order, duplicate ids) equals the in-memory answer."""

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sklearn.decomposition import PCA
from sqlalchemy.orm import Session

from app.services.ingest import table_sink
from tests.conftest import post_dataset, row_counts

pytestmark = pytest.mark.db

ROWS = 3_000  # 47 chunks of the tests' 64 rows; Arrow reads it in one block, so the checks
# that matter are those across chunks and across the sink's blocks


def _store_dirs(datasets_dir: Path) -> list[Path]:
    return [d for d in datasets_dir.iterdir() if d.is_dir()] if datasets_dir.exists() else []


def _refused_leaving_nothing(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    session: Session,
    datasets_dir: Path,
    upload: tuple[str, bytes],
    words: list[str],
) -> None:
    """Uploading the file (name, content) gets 422 naming `words`, and stores nothing."""
    before = row_counts(session)
    response = post_dataset(client, project_id, headers, *upload)
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["detail"]
    assert row_counts(session) == before
    assert _store_dirs(datasets_dir) == []


@pytest.fixture(params=["whole", "stream"])
def csv_reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a CSV is read: parsed whole (up to WHOLE_FILE_BYTES) and handed on in
    batches, or streamed block by block; small blocks and batches, so a file has several."""
    from app.services.ingest import csv_table

    if request.param == "stream":
        monkeypatch.setattr(csv_table, "WHOLE_FILE_BYTES", 0)
        monkeypatch.setattr(csv_table, "BLOCK_BYTES", 8192)
    else:
        monkeypatch.setattr(csv_table, "BATCH_ROWS", 500)
    return str(request.param)


def _csv(rows: int, bad_row: int | None = None, bad: str = "oops") -> bytes:
    lines = ["a,b,c"] + [f"{i},{i % 7}.5,{-i}" for i in range(rows)]
    if bad_row is not None:
        lines[bad_row] = bad
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("1,2,zz", ["'zz'", "'c'", "row 2500"]),
        ("1,2", ["row 2500", "2 fields", "header has 3"]),
        ("1,nan,3", ["NaN", "'b'", "row 2500"]),
        ("1,,3", ["missing value", "'b'", "row 2500"]),
        ("1,2,-inf", ["-inf", "'c'", "row 2500"]),
    ],
)
def test_a_bad_row_deep_in_a_csv_is_named_and_nothing_is_stored(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    datasets_dir: Path,
    bad: str,
    words: list[str],
    csv_reading: str,
) -> None:
    upload = ("d.csv", _csv(ROWS, 2500, bad))
    _refused_leaving_nothing(
        client, project_id, admin_headers, session, datasets_dir, upload, words
    )


def test_duplicate_ids_far_apart_are_found(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    lines = ["id,a"] + [f"item-{i},{i}" for i in range(ROWS)] + ["item-17,1"]
    before = row_counts(session)
    response = post_dataset(
        client, project_id, admin_headers, "d.csv", "\n".join(lines).encode(), id_column="id"
    )
    assert response.status_code == 422
    assert "duplicate id 'item-17'" in response.json()["detail"]
    assert f"rows 18 and {ROWS + 1}" in response.json()["detail"]
    assert row_counts(session) == before


def test_what_comes_from_the_whole_table_equals_the_in_memory_answer(
    client: TestClient, project_id: int, admin_headers: dict[str, str], csv_reading: str
) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(ROWS, 4)) * [1.0, 5.0, 0.1, 2.0] + [1e6, 0, 3, -7]
    classes = rng.choice(["10", "2", "1", ""], size=ROWS)
    ids = [f"r{i}" for i in range(ROWS)]
    text = "id,class,a,b,c,d\n" + "".join(
        f"{i},{k},{','.join(repr(float(v)) for v in row)}\n"
        for i, k, row in zip(ids, classes, X, strict=True)
    )
    response = post_dataset(
        client, project_id, admin_headers, "t.csv", text.encode(),
        id_column="id", ground_truth_column="class",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["n_items"] == ROWS
    assert dataset["ground_truth_classes"] == ["1", "2", "10"]  # by value, not as text
    stats = {s["name"]: s for s in dataset["meta"]["feature_stats"]}
    for j, name in enumerate("abcd"):
        column = X[:, j]
        assert stats[name]["mean"] == pytest.approx(column.mean(), rel=1e-12)
        assert stats[name]["std"] == pytest.approx(column.std(), rel=1e-9)
        assert (stats[name]["min"], stats[name]["max"]) == (column.min(), column.max())
        assert stats[name]["median"] == pytest.approx(np.median(column))
    items = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"limit": 5, "offset": 2990},
        headers=admin_headers,
    ).json()["items"]  # fmt: skip
    assert [i["id"] for i in items] == ids[2990:2995]
    assert [i["ground_truth"] for i in items] == [c or None for c in classes[2990:2995]]
    views = client.get(f"/api/v1/datasets/{dataset['id']}/views", headers=admin_headers).json()
    view = views["items"][0] if "items" in views else views[0]
    coords = client.get(
        f"/api/v1/datasets/{dataset['id']}/views/{view['id']}/coordinates",
        params={"format": "npy"},
        headers=admin_headers,
    )
    assert coords.status_code == 200
    got = np.load(io.BytesIO(coords.content))
    expected = PCA(n_components=2).fit_transform(X - X.mean(axis=0))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _parquet(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=700)
    return buffer.getvalue()


def test_a_parquet_table_uploads_with_ids_classes_and_ignored_columns(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    n = 2_000
    table = pa.table(
        {
            "key": [f"k{i}" for i in range(n)],
            "x": np.arange(n, dtype=np.float32),
            "y": np.arange(n, dtype=np.int64) % 5,
            "flag": np.arange(n) % 2 == 0,
            "note": ["text"] * n,
            "label": [["a", "b"][i % 2] for i in range(n)],
        }
    )
    response = post_dataset(
        client, project_id, admin_headers, "t.parquet", _parquet(table),
        id_column="key", ground_truth_column="label",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["n_items"] == n and dataset["feature_names"] == ["x", "y", "flag"]
    assert dataset["meta"]["ignored_columns"] == ["note"]
    assert dataset["ground_truth_classes"] == ["a", "b"]
    items = client.get(
        f"/api/v1/datasets/{dataset['id']}/items", params={"limit": 2, "offset": 1999},
        headers=admin_headers,
    ).json()["items"]  # fmt: skip
    assert items[0]["id"] == "k1999" and items[0]["values"] == [1999.0, 4.0, 0.0]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"PAR1 this is not parquet at all PAR1", ["Parquet", "corrupt"]),
        (
            _parquet(pa.table({"x": pa.array([1.0, None, 3.0])})),
            ["missing value", "'x'", "row 2"],
        ),
        (_parquet(pa.table({"s": ["a", "b"]})), ["no feature columns"]),
    ],
    ids=["corrupt", "null feature", "no numbers"],
)
def test_bad_parquet_files_are_refused_and_store_nothing(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    datasets_dir: Path,
    data: bytes,
    words: list[str],
) -> None:
    upload = ("t.parquet", data)
    _refused_leaving_nothing(
        client, project_id, admin_headers, session, datasets_dir, upload, words
    )


def test_a_large_npy_is_read_from_its_spooled_file_block_by_block(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    """Over Starlette's 1 MB spool the upload is a file: memory-mapped, not loaded."""
    array = np.random.default_rng(0).normal(size=(40_000, 5)).astype(np.float32)
    array[39_999, 3] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, array)
    response = post_dataset(client, project_id, admin_headers, "a.npy", buffer.getvalue())
    assert response.status_code == 422
    assert "NaN in column 'x3' at row 40000" in response.json()["detail"]
    array[39_999, 3] = 0.0
    buffer = io.BytesIO()
    np.save(buffer, np.asfortranarray(array))
    response = post_dataset(client, project_id, admin_headers, "a.npy", buffer.getvalue())
    assert response.status_code == 201, response.text
    assert response.json()["dtype"] == "float32"
    items = client.get(
        f"/api/v1/datasets/{response.json()['id']}/items", params={"limit": 1, "offset": 39_999},
        headers=admin_headers,
    ).json()["items"]  # fmt: skip
    np.testing.assert_array_equal(np.array(items[0]["values"], dtype=np.float32), array[39_999])


def test_a_parquet_upload_is_read_one_row_group_at_a_time(tmp_path: Path) -> None:
    """Arrow's memory while the blocks are read stays near a row group's, not the file's (its
    pre-buffering read every column chunk ahead: 1.5 GB for a 10M x 20 upload)."""
    from app.services.ingest.parquet_table import open_parquet, parquet_blocks

    groups, rows, columns = 12, 20_000, 10
    rng = np.random.default_rng(0)
    table = pa.table({f"f{j}": rng.normal(size=groups * rows) for j in range(columns)})
    path = tmp_path / "groups.parquet"
    pq.write_table(table, path, row_group_size=rows, compression="none")
    group_bytes = rows * columns * 8
    with path.open("rb") as stream:  # a file on disk, as a spooled upload is
        plan, file = open_parquet(stream)
        before, peak, seen = pa.total_allocated_bytes(), 0, []
        for features, _, _ in parquet_blocks(file, plan, 4_096):
            peak = max(peak, pa.total_allocated_bytes() - before)
            seen.append(features)
    np.testing.assert_array_equal(np.concatenate(seen), np.column_stack(table.columns))
    assert peak < 3 * group_bytes, (peak, group_bytes * groups)


@pytest.mark.parametrize(
    ("wide", "exact_bytes"),
    [
        (10_000, 1 << 30),  # the covariance, its top eigenvectors by Lanczos iterations
        (100, 1 << 30),  # no covariance: the rows decomposed exactly
        (100, 0),  # no covariance, too many rows to hold: randomized subspace iterations
    ],
    ids=["covariance", "wide-exact", "wide-randomized"],
)
def test_a_wide_table_gets_the_pca_view_scikit_learn_computes(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    wide: int,
    exact_bytes: int,
) -> None:
    """Above a few hundred columns the leading components come from Lanczos iterations, not
    a full decomposition (cubic in the columns: 19 s at 4,000); above WIDE_FEATURES the d x d
    covariance is never formed (800 MB at 10,000 columns): the view must not change."""
    monkeypatch.setattr(table_sink, "WIDE_FEATURES", wide)
    monkeypatch.setattr(table_sink, "WIDE_EXACT_BYTES", exact_bytes)
    rng = np.random.default_rng(3)
    rows, columns = 40, 700
    X = rng.normal(size=(rows, columns)) * np.linspace(4.0, 0.5, columns)  # distinct variances
    if not exact_bytes:  # two directions well above the rest, as any table worth a view has
        X += np.outer(rng.normal(size=rows) * 30, rng.normal(size=columns) / np.sqrt(columns))
        X += np.outer(rng.normal(size=rows) * 15, rng.normal(size=columns) / np.sqrt(columns))
    text = ",".join(f"c{j}" for j in range(columns)) + "\n"
    text += "\n".join(",".join(repr(float(v)) for v in row) for row in X) + "\n"
    response = post_dataset(client, project_id, admin_headers, "wide.csv", text.encode())
    assert response.status_code == 201, response.text
    dataset_id = response.json()["id"]
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
    view = views["items"][0] if "items" in views else views[0]
    coords = client.get(
        f"/api/v1/datasets/{dataset_id}/views/{view['id']}/coordinates",
        params={"format": "npy"},
        headers=admin_headers,
    )
    got = np.load(io.BytesIO(coords.content))
    expected = PCA(n_components=2, svd_solver="full").fit_transform(X)
    expected *= np.sign(expected[np.argmax(np.abs(expected), axis=0), [0, 1]])
    got = got * np.sign(got[np.argmax(np.abs(got), axis=0), [0, 1]])
    if exact_bytes:
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
    else:  # iterated to within a thousandth of a radian: invisible in a scatterplot
        np.testing.assert_allclose(got, expected, rtol=0, atol=0.005 * np.abs(expected).max())
