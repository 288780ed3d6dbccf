"""Tables read in place (`app/store/sources/tables.py`): Parquet files and datasets, NPY files
and Zarr arrays, on the local filesystem and in S3 (moto), read by row range from metadata and
the row groups, byte ranges or chunks that overlap, never copied."""

import os
import pickle
import re
import uuid
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr

from app.store.sources.tables import SourceError, SourceTable, inspect_table
from tests.store.s3_server import S3Server

SECRET = "fake-secret-never-shown-4711"


def _table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": [f"item-{start + i}" for i in range(n)],
            "f32": rng.normal(size=n).astype(np.float32),
            "a": rng.normal(size=n),
            "count": rng.integers(0, 100, size=n),
            "label": [f"class-{i % 3}" for i in range(n)],
            "b": rng.normal(size=n),
        }
    )


def _whole(table: pa.Table, columns: list[str]) -> np.ndarray:
    return np.column_stack([table.column(c).to_numpy().astype(np.float64) for c in columns])


def _ranges(n: int, step: int = 3) -> list[tuple[int, int]]:
    found = [(a, b) for a in range(0, n + 1, step) for b in range(a, n + 1, 5)]
    return [*found, (0, n), (n - 1, n), (0, 1), (n, n)]


def _check_reads(table: SourceTable, whole: np.ndarray, ranges: list[tuple[int, int]]) -> None:
    for a, b in ranges:
        got = table.read(a, b)
        assert got.dtype == np.dtype(table.dtype)
        assert got.flags.c_contiguous
        assert got.shape == (b - a, whole.shape[1])
        np.testing.assert_array_equal(got, whole[a:b].astype(table.dtype), err_msg=f"[{a}, {b})")
    np.testing.assert_array_equal(table.read(), whole.astype(table.dtype))


def _check_blocks_and_dask(table: SourceTable, whole: np.ndarray, *, light: bool = False) -> None:
    expected = whole.astype(table.dtype)
    for rows in (6, table.n_rows + 5) if light else (1, 6, 11, table.n_rows, table.n_rows + 5):
        blocks = list(table.blocks(rows))
        assert all(0 < len(block) <= rows for block in blocks)
        np.testing.assert_array_equal(np.concatenate(blocks), expected)
    for rows_per_task in (7,) if light else (7, table.n_rows):
        array = table.dask_array(rows_per_task)
        assert array.shape == expected.shape and array.dtype == expected.dtype
        with dask.config.set(scheduler="synchronous"):
            np.testing.assert_array_equal(array.compute(), expected)
    if light:
        return
    # What a worker gets: the graph pickles (no open files, no filesystem objects)
    shipped = pickle.loads(pickle.dumps(table.dask_array(9)))
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(shipped.compute(), expected)


# -- local files --------------------------------------------------------------------------------


@pytest.fixture
def parquet_file(tmp_path: Path) -> tuple[Path, pa.Table]:
    table = _table(40)
    path = tmp_path / "table.parquet"
    pq.write_table(table, path, row_group_size=23)  # two row groups: 23 + 17
    return path, table


@pytest.fixture
def parquet_dataset(tmp_path: Path) -> tuple[Path, pa.Table]:
    folder = tmp_path / "dataset"
    (folder / "sub").mkdir(parents=True)
    parts = [_table(7, 0, seed=1), _table(13, 7, seed=2), _table(10, 20, seed=3)]
    names = ["part-0.parquet", "part-1.parquet", "sub/part-2.parquet"]
    for name, part in zip(names, parts, strict=True):
        pq.write_table(part, folder / name, row_group_size=4)
    (folder / "_SUCCESS").write_bytes(b"")
    return folder, pa.concat_tables(parts)


def test_parquet_file_is_inspected_from_its_footer(parquet_file: tuple[Path, pa.Table]) -> None:
    path, _ = parquet_file
    table = inspect_table("file", str(path), {})
    assert table.format == "parquet" and table.protocol == "file"
    assert table.columns == ("f32", "a", "count", "b")  # the numeric ones, in order
    assert table.dtype == "float64" and table.n_rows == 40
    (file,) = table.files
    assert file.url == f"file://{path}"
    assert (file.rows, file.size) == (40, path.stat().st_size)
    assert file.version == str(path.stat().st_mtime)
    assert inspect_table("file", str(path), {}, columns=["f32"]).dtype == "float32"
    assert inspect_table("file", str(path), {}, "parquet", ["b", "a"]).columns == ("b", "a")


def test_parquet_file_reads_any_row_range(parquet_file: tuple[Path, pa.Table]) -> None:
    path, whole_table = parquet_file
    table = inspect_table("file", str(path), {}, columns=["a", "f32", "count"])
    whole = _whole(whole_table, ["a", "f32", "count"])
    _check_reads(table, whole, _ranges(40))
    _check_blocks_and_dask(table, whole)
    f32 = inspect_table("file", str(path), {}, columns=["f32"])
    np.testing.assert_array_equal(
        f32.read(20, 26)[:, 0], whole_table.column("f32").to_numpy()[20:26]
    )


def test_only_the_overlapping_row_groups_are_read(
    parquet_dataset: tuple[Path, pa.Table], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, whole_table = parquet_dataset
    table = inspect_table("file", str(folder), {})
    read: list[int] = []
    original = pq.ParquetFile.read_row_group

    def counted(self: pq.ParquetFile, i: int, *args: Any, **kwargs: Any) -> pa.Table:
        read.append(self.metadata.num_rows * 100 + i)  # (the file's rows, the group)
        return original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    # rows 8-9 are rows 1-2 of the second file (13 rows): its first row group only
    whole = _whole(whole_table, list(table.columns))
    np.testing.assert_array_equal(table.read(8, 10), whole[8:10])
    assert read == [1300]
    read.clear()
    # rows 6-12: the first file's last group (of 4 + 3 rows), the second's first two (4 + 4 + ...)
    np.testing.assert_array_equal(table.read(6, 13), whole[6:13])
    assert read == [701, 1300, 1301]


def test_strings_of_a_parquet_column(parquet_file: tuple[Path, pa.Table], tmp_path: Path) -> None:
    path, whole = parquet_file
    table = inspect_table("file", str(path), {})
    assert table.strings("id", 20, 25) == [f"item-{i}" for i in range(20, 25)]
    assert table.strings("id") == whole.column("id").to_pylist()
    assert table.strings("label", 38) == ["class-2", "class-0"]
    assert table.strings("count", 0, 2) == [str(v) for v in whole.column("count")[:2].to_pylist()]
    with pytest.raises(SourceError, match="'nope'"):
        table.strings("nope", 0, 3)
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"id": ["x", None, "z"], "v": [1.0, 2.0, 3.0]}), nulls)
    assert inspect_table("file", str(nulls), {}).strings("id") == ["x", "", "z"]


def test_parquet_dataset_reads_across_files_and_row_groups(
    parquet_dataset: tuple[Path, pa.Table],
) -> None:
    folder, whole_table = parquet_dataset
    table = inspect_table("file", str(folder), {})
    assert [f.url.rsplit("/", 2)[-2:] for f in table.files] == [
        ["dataset", "part-0.parquet"],
        ["dataset", "part-1.parquet"],
        ["sub", "part-2.parquet"],
    ]
    assert [f.rows for f in table.files] == [7, 13, 10] and table.n_rows == 30
    whole = _whole(whole_table, list(table.columns))
    _check_reads(table, whole, _ranges(30, step=2))
    _check_blocks_and_dask(table, whole)
    assert table.strings("id", 5, 22) == [f"item-{i}" for i in range(5, 22)]


def test_a_missing_value_or_nan_is_refused_naming_row_and_column(tmp_path: Path) -> None:
    values = np.arange(30, dtype=np.float64)
    values[23] = np.nan
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"ok": np.ones(30), "v": values}), path, row_group_size=10)
    table = inspect_table("file", str(path), {})
    np.testing.assert_array_equal(table.read(0, 20)[:, 1], values[:20])
    for attempt in (lambda: table.read(15, 25), lambda: list(table.blocks(8))):
        with pytest.raises(SourceError, match=r"row 23\b.*'v'") as caught:
            attempt()
        assert f"file://{path}" in str(caught.value)

    empty = tmp_path / "null.parquet"
    pq.write_table(pa.table({"n": pa.array([1, 2, None, 4], pa.int64())}), empty)
    with pytest.raises(SourceError, match=r"row 2\b.*'n'.*null"):
        inspect_table("file", str(empty), {}).read()

    # in a dataset the row is the table's (7 rows before this file), and the file is named
    folder = tmp_path / "ds"
    folder.mkdir()
    pq.write_table(pa.table({"v": np.zeros(7)}), folder / "a.parquet")
    pq.write_table(pa.table({"v": [0.0, 1.0, 2.0, np.inf]}), folder / "b.parquet")
    with pytest.raises(SourceError, match=r"b\.parquet: row 10 \(row 3 of this file\).*'v'"):
        inspect_table("file", str(folder), {}).read()


def test_booleans_and_small_integers_are_features(tmp_path: Path) -> None:
    path = tmp_path / "kinds.parquet"
    flags = np.arange(10) % 3 == 0
    small = np.arange(10, dtype=np.int8) - 5
    pq.write_table(pa.table({"flag": flags, "small": small}), path, row_group_size=4)
    table = inspect_table("file", str(path), {})
    assert table.columns == ("flag", "small") and table.dtype == "float64"
    whole = np.column_stack([flags, small]).astype(np.float64)
    np.testing.assert_array_equal(table.read(3, 9), whole[3:9])
    np.testing.assert_array_equal(np.concatenate(list(table.blocks(3))), whole)


def test_columns_that_cannot_be_features_are_refused(
    parquet_file: tuple[Path, pa.Table], tmp_path: Path
) -> None:
    path, _ = parquet_file
    with pytest.raises(SourceError, match=r"'label'.*not numbers"):
        inspect_table("file", str(path), {}, columns=["a", "label"])
    with pytest.raises(SourceError, match="no column 'missing'"):
        inspect_table("file", str(path), {}, columns=["missing"])
    text_only = tmp_path / "text.parquet"
    pq.write_table(pa.table({"name": ["a", "b"]}), text_only)
    with pytest.raises(SourceError, match="no numeric columns"):
        inspect_table("file", str(text_only), {})


def test_a_dataset_whose_files_differ_is_refused_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1.0], "b": [2.0]}), folder / "p0.parquet")
    pq.write_table(pa.table({"a": [1.0], "b": [2.0]}), folder / "p1.parquet")
    pq.write_table(pa.table({"a": [1.0], "b": ["x"]}), folder / "p2.parquet")
    with pytest.raises(SourceError, match=r"p2\.parquet has other columns than .*p0\.parquet"):
        inspect_table("file", str(folder), {})


def test_compressed_csv_and_unknown_formats_are_refused(tmp_path: Path) -> None:
    packed = tmp_path / "table.csv.gz"
    packed.write_bytes(b"not read")
    with pytest.raises(SourceError, match=r"table\.csv\.gz is compressed.*Parquet"):
        inspect_table("file", str(packed), {})
    with pytest.raises(SourceError, match="is compressed"):
        inspect_table("file", str(tmp_path), {})  # a folder of compressed CSV files only
    other = tmp_path / "table.json"
    other.write_text("{}")
    with pytest.raises(SourceError, match=r"table\.json: not a format read in place.*Parquet"):
        inspect_table("file", str(other), {})


def test_a_missing_object_is_refused_naming_it(tmp_path: Path) -> None:
    for name in ("gone.parquet", "gone.npy", "gone"):
        with pytest.raises(SourceError, match=re.escape(f"file://{tmp_path}/{name}: no such file")):
            inspect_table("file", str(tmp_path / name), {})


def test_versions_show_a_rewritten_or_removed_file(parquet_dataset: tuple[Path, pa.Table]) -> None:
    folder, _ = parquet_dataset
    table = inspect_table("file", str(folder), {})
    assert table.current_versions() == [(f.url, f.version) for f in table.files]
    second = folder / "part-1.parquet"
    pq.write_table(_table(13, seed=9), second)
    later = second.stat().st_mtime + 5
    os.utime(second, (later, later))
    now = dict(table.current_versions())
    assert now[table.files[1].url] == str(later) != table.files[1].version
    assert now[table.files[0].url] == table.files[0].version
    with pytest.raises(SourceError, match=r"part-1\.parquet changed since it was read"):
        table.read(0, 30)
    np.testing.assert_array_equal(table.read(0, 7), table.read(0, 7))  # the others still read
    (folder / "sub" / "part-2.parquet").unlink()
    assert dict(table.current_versions())[table.files[2].url] is None


def test_npy_reads_rows_by_byte_range(tmp_path: Path) -> None:
    whole = np.random.default_rng(4).normal(size=(37, 4)).astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, whole)
    table = inspect_table("file", str(path), {})
    assert (table.format, table.dtype, table.n_rows) == ("npy", "float32", 37)
    assert table.columns == ("x0", "x1", "x2", "x3")
    assert table.files[0].size == path.stat().st_size
    _check_reads(table, whole, _ranges(37))
    _check_blocks_and_dask(table, whole)
    with pytest.raises(SourceError, match="no named columns"):
        table.strings("x0")

    ints = tmp_path / "ints.npy"
    np.save(ints, np.arange(12, dtype=np.int32).reshape(4, 3))
    as_floats = inspect_table("file", str(ints), {})
    assert as_floats.dtype == "float64"
    np.testing.assert_array_equal(as_floats.read(1, 3), [[3, 4, 5], [6, 7, 8]])

    fortran = tmp_path / "f.npy"
    np.save(fortran, np.asfortranarray(np.ones((3, 2))))
    with pytest.raises(SourceError, match="Fortran"):
        inspect_table("file", str(fortran), {})
    cube = tmp_path / "cube.npy"
    np.save(cube, np.ones((2, 2, 2)))
    with pytest.raises(SourceError, match="3 dimensions"):
        inspect_table("file", str(cube), {})
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[0.0, 1.0], [2.0, np.nan]]))
    with pytest.raises(SourceError, match=r"nan\.npy: row 1\b.*'x1'"):
        inspect_table("file", str(nan), {}).read()


def test_zarr_reads_rows_by_slicing(tmp_path: Path) -> None:
    whole = np.random.default_rng(5).normal(size=(45, 3))
    path = tmp_path / "arr.zarr"
    array = zarr.open_array(str(path), mode="w", shape=whole.shape, chunks=(10, 3), dtype="f8")
    array[...] = whole
    table = inspect_table("file", str(path), {})
    assert (table.format, table.dtype, table.n_rows) == ("zarr", "float64", 45)
    assert table.columns == ("x0", "x1", "x2")
    (file,) = table.files
    assert (file.url, file.rows, file.size) == (f"file://{path}", 45, 0)
    assert len(file.version) == 32
    _check_reads(table, whole, _ranges(45, step=4))
    _check_blocks_and_dask(table, whole)
    assert [len(b) for b in table.blocks(25)] == [20, 20, 5]  # whole chunks
    assert table.current_versions() == [(file.url, file.version)]
    zarr.open_array(str(path), mode="w", shape=(46, 3), chunks=(10, 3), dtype="f8")
    assert table.current_versions()[0][1] != file.version
    with pytest.raises(SourceError, match="changed since it was read"):
        table.read(0, 5)

    cube = zarr.open_array(str(tmp_path / "cube"), mode="w", shape=(2, 2, 2), dtype="f4")
    assert cube.shape == (2, 2, 2)
    with pytest.raises(SourceError, match="3 dimensions"):
        inspect_table("file", str(tmp_path / "cube"), {})


# -- S3 -----------------------------------------------------------------------------------------


def _put(s3: S3Server, key: str, body: bytes) -> None:
    s3.client().put_object(Bucket=s3.bucket, Key=key, Body=body)


def _parquet_bytes(table: pa.Table, row_group_size: int) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=row_group_size)
    return bytes(sink.getvalue().to_pybytes())


def _secret_options(s3: S3Server) -> dict[str, Any]:
    return s3.options(secret=SECRET)


def _no_secret(text: str) -> None:
    assert SECRET not in text


def test_s3_parquet_dataset(s3_server: S3Server) -> None:
    prefix = f"sources/{uuid.uuid4().hex}"
    parts = [_table(9, 0, seed=1), _table(12, 9, seed=2), _table(6, 21, seed=3)]
    for i, part in enumerate(parts):
        _put(s3_server, f"{prefix}/data/part-{i}.parquet", _parquet_bytes(part, 5))
    options = _secret_options(s3_server)
    table = inspect_table("s3", f"{s3_server.bucket}/{prefix}/data", options)
    _no_secret(repr(table))
    assert [f.url for f in table.files] == [
        f"s3://{s3_server.bucket}/{prefix}/data/part-{i}.parquet" for i in range(3)
    ]
    assert [f.rows for f in table.files] == [9, 12, 6] and table.dtype == "float64"
    assert all(f.version.strip('"') for f in table.files)
    whole = _whole(pa.concat_tables(parts), list(table.columns))
    _check_reads(table, whole, [(0, 27), (3, 4), (4, 11), (8, 22), (20, 27), (26, 27), (9, 21)])
    _check_blocks_and_dask(table, whole, light=True)
    assert table.strings("id", 7, 10) == ["item-7", "item-8", "item-9"]

    single = inspect_table("s3", f"{s3_server.bucket}/{prefix}/data/part-1.parquet", options)
    np.testing.assert_array_equal(single.read(2, 11), whole[11:20])

    # rewritten: another ETag, and reading it is refused
    assert table.current_versions() == [(f.url, f.version) for f in table.files]
    _put(s3_server, f"{prefix}/data/part-1.parquet", _parquet_bytes(_table(12, seed=7), 5))
    now = dict(table.current_versions())
    assert now[table.files[1].url] != table.files[1].version
    assert now[table.files[0].url] == table.files[0].version
    with pytest.raises(SourceError, match=r"part-1\.parquet changed since") as caught:
        table.read(8, 10)
    _no_secret(str(caught.value))
    s3_server.client().delete_object(Bucket=s3_server.bucket, Key=f"{prefix}/data/part-2.parquet")
    assert dict(table.current_versions())[table.files[2].url] is None


def test_s3_npy_and_zarr(s3_server: S3Server, tmp_path: Path) -> None:
    prefix = f"sources/{uuid.uuid4().hex}"
    options = _secret_options(s3_server)
    whole = np.random.default_rng(6).normal(size=(33, 5))
    local = tmp_path / "x.npy"
    np.save(local, whole)
    _put(s3_server, f"{prefix}/x.npy", local.read_bytes())
    npy = inspect_table("s3", f"{s3_server.bucket}/{prefix}/x.npy", options)
    assert (npy.format, npy.dtype, npy.n_rows, len(npy.columns)) == ("npy", "float64", 33, 5)
    _check_reads(npy, whole, [(0, 33), (5, 6), (7, 30), (32, 33)])
    _check_blocks_and_dask(npy, whole, light=True)

    array_dir = tmp_path / "arr.zarr"
    array = zarr.open_array(str(array_dir), mode="w", shape=(33, 5), chunks=(8, 5), dtype="f4")
    array[...] = whole.astype(np.float32)
    for file in array_dir.rglob("*"):
        if file.is_file():
            _put(s3_server, f"{prefix}/arr.zarr/{file.relative_to(array_dir)}", file.read_bytes())
    table = inspect_table("s3", f"{s3_server.bucket}/{prefix}/arr.zarr", options)
    assert (table.format, table.dtype, table.n_rows) == ("zarr", "float32", 33)
    _check_reads(table, whole, [(0, 33), (3, 19), (16, 24), (31, 33)])
    _check_blocks_and_dask(table, whole, light=True)
    assert table.current_versions() == [(table.files[0].url, table.files[0].version)]


def test_s3_errors_name_the_object_and_never_an_option(s3_server: S3Server) -> None:
    prefix = f"sources/{uuid.uuid4().hex}"
    bucket = s3_server.bucket
    options = _secret_options(s3_server)
    values = np.arange(12, dtype=np.float64)
    values[5] = np.nan
    _put(
        s3_server,
        f"{prefix}/t.parquet",
        _parquet_bytes(pa.table({"s": ["a"] * 12, "v": values}), 4),
    )
    _put(s3_server, f"{prefix}/t.csv.gz", b"a,b\n1,2\n")

    def refused(match: str, *args: Any, **kwargs: Any) -> SourceError:
        with pytest.raises(SourceError, match=match) as caught:
            inspect_table(*args, **kwargs)
        _no_secret(str(caught.value))
        return caught.value

    refused(
        f"s3://{bucket}/{prefix}/missing.parquet: no such",
        "s3",
        f"{bucket}/{prefix}/missing.parquet",
        options,
    )
    refused(f"s3://{bucket}/{prefix}/nothing: no such", "s3", f"{bucket}/{prefix}/nothing", options)
    refused("t.csv.gz is compressed", "s3", f"{bucket}/{prefix}/t.csv.gz", options)
    refused("'s'.*not numbers", "s3", f"{bucket}/{prefix}/t.parquet", options, columns=["s"])
    table = inspect_table("s3", f"{bucket}/{prefix}/t.parquet", options)
    _no_secret(repr(table))
    with pytest.raises(
        SourceError, match=rf"s3://{bucket}/{prefix}/t\.parquet: row 5\b.*'v'"
    ) as caught:
        table.read(2, 9)
    _no_secret(str(caught.value))
    # a server that cannot be reached: the message says so without the endpoint or the secret
    closed = {**options, "endpoint_url": "http://127.0.0.1:9"}
    error = refused(
        f"s3://{bucket}/{prefix}/t.parquet", "s3", f"{bucket}/{prefix}/t.parquet", closed
    )
    assert "127.0.0.1:9" not in str(error)


def test_a_footer_is_read_from_one_request_for_the_tail_unless_it_is_larger(
    tmp_path: Path,
) -> None:
    """Registering reads each file's last 64 KiB once and its metadata from them; a footer
    larger than that (thousands of columns) is read by opening the file, as before."""
    from unittest import mock

    from app.store.sources import parquet_source

    folder = tmp_path / "parts"
    folder.mkdir()
    parts = [_table(10 + k, seed=k) for k in range(3)]
    for k, part in enumerate(parts):
        pq.write_table(part, folder / f"p{k}.parquet")
    wide = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{j}": np.arange(3.0) for j in range(3_000)}), wide)
    real = parquet_source.footer_tail
    returned: list[bytes | None] = []

    def spy(*args: Any) -> bytes | None:
        returned.append(real(*args))
        return returned[-1]

    with mock.patch.object(parquet_source, "footer_tail", spy):
        table = inspect_table("file", str(folder), {})
        assert [f.rows for f in table.files] == [10, 11, 12]
        assert len(returned) == 3 and all(tail is not None for tail in returned)
        assert inspect_table("file", str(wide), {}).n_rows == 3
    assert len(returned) == 4 and returned[-1] is None
    columns = ["f32", "a", "count", "b"]
    whole = np.vstack([_whole(part, columns) for part in parts])
    _check_reads(table, whole, [(0, 33), (9, 12)])
