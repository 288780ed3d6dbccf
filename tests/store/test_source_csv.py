"""CSV read in place (`app/store/sources/csv_source.py`): records counted once at inspection
(newlines inside quotes and blank lines are no records), rows read by byte range from the marks,
on the local filesystem and in S3 (moto); refusals name the object, the row and the column."""

import os
import pickle
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.store.sources import csv_source
from app.store.sources.tables import SourceError, SourceTable, inspect_table
from tests.store.s3_server import S3Server

SECRET = "fake-secret-never-shown-4711"


@contextmanager
def small_blocks(scan: int = 64, mark: int = 100) -> Iterator[None]:
    """Blocks and marks a few rows apart, so that every boundary case is met on small files."""
    with (
        mock.patch.object(csv_source, "SCAN_BYTES", scan),
        mock.patch.object(csv_source, "MARK_BYTES", mark),
    ):
        yield


def _lines(values: np.ndarray, ids: list[str], newline: str = "\n") -> str:
    header = "id,a,b,c,cls"
    rows = [f"{ids[i]},{_cells(values[i])},k{i % 3}" for i in range(len(values))]
    return newline.join([header, *rows]) + newline


def _cells(row: np.ndarray) -> str:
    return ",".join(repr(float(v)) for v in row)  # repr: the shortest text read back exactly


def _check(table: SourceTable, values: np.ndarray) -> None:
    n = len(values)
    assert table.n_rows == n
    for a, b in [(0, n), (0, 1), (n - 1, n), (n // 3, 2 * n // 3), (5, 6), (n, n)]:
        np.testing.assert_array_equal(table.read(a, b), values[a:b], err_msg=f"[{a}, {b})")
    stacked = np.vstack(list(table.blocks(7)))
    np.testing.assert_array_equal(stacked, values)


@st.composite
def awkward_files(draw: st.DrawFn) -> tuple[bytes, np.ndarray, list[str]]:
    """A CSV with what real files hold: a byte-order mark, CRLF, blank lines, quoted ids with
    commas, doubled quotes and newlines, and no newline after the last row."""
    n = draw(st.integers(1, 60))
    values = np.asarray(
        draw(
            st.lists(
                st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3),
                min_size=n,
                max_size=n,
            )
        )
    )
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    ids: list[str] = []
    parts = ["id,a,b,c"]
    for i in range(n):
        style = draw(st.sampled_from(["plain", "comma", "quote", "newline"]))
        text = {"plain": f"i{i}", "comma": f"i,{i}", "quote": f'i"{i}"', "newline": f"i\n{i}"}
        ids.append(text[style])
        cell = text[style] if style == "plain" else '"' + text[style].replace('"', '""') + '"'
        blank = draw(st.sampled_from(["", newline, newline * 2]))
        parts.append(blank + f"{cell},{_cells(values[i])}")
    text = newline.join(parts) + draw(st.sampled_from(["", newline, newline + newline]))
    bom = draw(st.booleans())
    return ("\ufeff" if bom else "").encode() + text.encode(), values, ids


@settings(max_examples=60)
@given(awkward_files(), st.sampled_from([(16, 24), (64, 100), (4096, 4096)]))
def test_records_are_counted_and_read_back_whatever_the_file_holds(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[bytes, np.ndarray, list[str]],
    sizes: tuple[int, int],
) -> None:
    data, values, ids = case
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    path.write_bytes(data)
    with small_blocks(*sizes):
        table = inspect_table("file", str(path), {})
        assert table.columns == ("a", "b", "c")
        _check(table, values)
        assert table.strings("id") == ids
        assert table.strings("id", len(ids) - 1, len(ids)) == ids[-1:]


def test_marks_keep_reads_short_and_rows_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(5_000, 3))
    path = tmp_path / "t.csv"
    path.write_text(_lines(values, [f"item-{i}" for i in range(5_000)]))
    with small_blocks(scan=4096, mark=2048):
        table = inspect_table("file", str(path), {})
    marks = table.files[0].csv.marks  # type: ignore[union-attr]
    offsets = [o for _, o in marks]
    assert len(marks) > 50 and offsets == sorted(offsets)
    text = path.read_bytes()
    for row, offset in marks:  # each mark is the start of its row's line
        line = text[offset : text.index(b"\n", offset)].decode()
        assert line.startswith(f"item-{row},")
    _check(table, values)
    assert table.strings("cls", 10, 13) == ["k1", "k2", "k0"]
    # a Dask task reads its own rows; the table pickles (no file open, no option shown)
    lazy = pickle.loads(pickle.dumps(table)).dask_array(777)
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(lazy.compute(), values)


def test_a_directory_of_files_is_one_table_and_tab_separated_files_are_read(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(1)
    parts = [rng.normal(size=(n, 3)) for n in (40, 1, 25)]
    start = 0
    for k, part in enumerate(parts):
        ids = [f"r{start + i}" for i in range(len(part))]
        (tmp_path / f"part-{k}.tsv").write_text(_lines(part, ids).replace(",", "\t"))
        start += len(part)
    table = inspect_table("file", str(tmp_path), {})
    assert table.format == "csv" and len(table.files) == 3
    whole = np.vstack(parts)
    _check(table, whole)
    assert table.strings("id", 39, 42) == ["r39", "r40", "r41"]
    chosen = inspect_table("file", str(tmp_path), {}, columns=["c", "a"])
    np.testing.assert_array_equal(chosen.read(0, 66), whole[:, [2, 0]])


def test_refusals_name_the_object_the_row_and_the_column(tmp_path: Path) -> None:
    values = np.arange(3 * 3_000, dtype=np.float64).reshape(3_000, 3)
    lines = _lines(values, [f"i{i}" for i in range(3_000)]).splitlines()
    bad = list(lines)
    assert ",7501.0," in bad[2_501] and ",5401.0," in lines[1_801]
    bad[2_501] = bad[2_501].replace(",7501.0,", ",seven,")  # row 2,500, past the sample
    (tmp_path / "bad.csv").write_text("\n".join(bad) + "\n")
    table = inspect_table("file", str(tmp_path / "bad.csv"), {})
    assert table.n_rows == 3_000  # counting reads no value
    table.read(0, 2_000)  # rows before it read
    with pytest.raises(SourceError, match=r"bad\.csv: row 2500, column 'b' is 'seven', not a"):
        table.read(2_400, 2_600)
    missing = list(lines)
    missing[1_801] = missing[1_801].replace(",5401.0,", ",,")
    (tmp_path / "missing.csv").write_text("\n".join(missing) + "\n")
    with pytest.raises(SourceError, match=r"missing\.csv: row 1800, column 'b' is missing"):
        inspect_table("file", str(tmp_path / "missing.csv"), {}).read()
    ragged = list(lines)
    ragged[2_001] += ",extra"
    (tmp_path / "ragged.csv").write_text("\n".join(ragged) + "\n")
    with pytest.raises(SourceError, match=r"ragged\.csv: row 2000 has 6 fields but the header"):
        inspect_table("file", str(tmp_path / "ragged.csv"), {}).read()
    (tmp_path / "nan.csv").write_text("a,b\n1,2\n3,nan\n")
    with pytest.raises(SourceError, match=r"nan\.csv: row 1, column 'b' is NaN"):
        inspect_table("file", str(tmp_path / "nan.csv"), {}).read()
    (tmp_path / "open.csv").write_text('a,b\n1,"2\n3,4\n')
    with pytest.raises(SourceError, match=r"open\.csv: a quoted field is never closed"):
        inspect_table("file", str(tmp_path / "open.csv"), {})
    (tmp_path / "empty.csv").write_text("\n\n")
    with pytest.raises(SourceError, match=r"empty\.csv is empty"):
        inspect_table("file", str(tmp_path / "empty.csv"), {})
    (tmp_path / "text.csv").write_text("name,x\nann,1\nbob,2\n")
    with pytest.raises(SourceError, match=r"column 'name' holds text, not numbers"):
        inspect_table("file", str(tmp_path / "text.csv"), {}, columns=["name", "x"])
    with pytest.raises(SourceError, match=r"has no column 'y' \(its columns: 'name', 'x'\)"):
        inspect_table("file", str(tmp_path / "text.csv"), {}, columns=["y"])
    (tmp_path / "twice.csv").write_text("x,x\n1,2\n")
    with pytest.raises(SourceError, match=r"column name 'x' appears twice"):
        inspect_table("file", str(tmp_path / "twice.csv"), {})


def test_files_of_one_directory_must_share_their_header(tmp_path: Path) -> None:
    (tmp_path / "p0.csv").write_text("a,b\n1,2\n")
    (tmp_path / "p1.csv").write_text("a,c\n1,2\n")
    with pytest.raises(SourceError, match=r"p1\.csv has another header than .*p0\.csv"):
        inspect_table("file", str(tmp_path), {})


def test_a_file_that_changed_is_refused_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n")
    table = inspect_table("file", str(path), {})
    path.write_text("a,b\n9,9\n")
    os.utime(path, (1_000_000_000, 1_000_000_000))
    with pytest.raises(SourceError, match=r"t\.csv changed since it was read"):
        table.read()


def test_a_csv_dataset_on_s3_is_read_in_place_and_never_shows_an_option(
    s3_server: S3Server,
) -> None:
    prefix = f"sources/{uuid.uuid4().hex}"
    options = s3_server.options(secret=SECRET)
    rng = np.random.default_rng(2)
    parts = [rng.normal(size=(n, 3)) for n in (30, 45)]
    start = 0
    for k, part in enumerate(parts):
        body = _lines(part, [f"s{start + i}" for i in range(len(part))], "\r\n").encode()
        s3_server.client().put_object(Bucket=s3_server.bucket, Key=f"{prefix}/p{k}.csv", Body=body)
        start += len(part)
    with small_blocks(scan=256, mark=300):
        table = inspect_table("s3", f"{s3_server.bucket}/{prefix}", options)
    assert SECRET not in repr(table)
    _check(table, np.vstack(parts))
    assert table.strings("id", 29, 31) == ["s29", "s30"]
    s3_server.client().put_object(Bucket=s3_server.bucket, Key=f"{prefix}/p1.csv", Body=b"a\n1\n")
    with pytest.raises(SourceError, match=r"p1\.csv changed since it was read") as caught:
        table.read(40, 50)
    assert SECRET not in str(caught.value)


def test_a_sync_reads_only_the_objects_that_changed(tmp_path: Path) -> None:
    """Given the earlier record, an unchanged object (same version and size in the listing)
    keeps its count and marks; a changed or new one is counted; the result is what a fresh
    inspection finds. Parquet footers alike (the first file's is read for the types)."""
    rng = np.random.default_rng(4)
    parts = [rng.normal(size=(n, 3)) for n in (20, 30, 40)]
    for k, part in enumerate(parts):
        (tmp_path / f"p{k}.csv").write_text(_lines(part, [f"r{k}-{i}" for i in range(len(part))]))
    before = inspect_table("file", str(tmp_path), {})
    parts[1] = rng.normal(size=(35, 3))
    (tmp_path / "p1.csv").write_text(_lines(parts[1], [f"x{i}" for i in range(35)]))
    os.utime(tmp_path / "p1.csv", (2_000_000_000, 2_000_000_000))
    parts.append(rng.normal(size=(5, 3)))
    (tmp_path / "p3.csv").write_text(_lines(parts[3], [f"y{i}" for i in range(5)]))
    counted = mock.Mock(wraps=csv_source.count_records)
    with mock.patch.object(csv_source, "count_records", counted):
        after = inspect_table("file", str(tmp_path), {}, known=before.files)
    assert sorted(c.args[1].rsplit("/", 1)[-1] for c in counted.call_args_list) == [
        "p1.csv",
        "p3.csv",
    ]
    assert after == inspect_table("file", str(tmp_path), {})
    _check(after, np.vstack(parts))

    import pyarrow as pa
    import pyarrow.parquet as pq

    from app.store.sources import parquet_source

    folder = tmp_path / "pq"
    folder.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"a": rng.normal(size=10 + k)}), folder / f"p{k}.parquet")
    recorded = inspect_table("file", str(folder), {})
    pq.write_table(pa.table({"a": rng.normal(size=7)}), folder / "p2.parquet")
    os.utime(folder / "p2.parquet", (2_000_000_000, 2_000_000_000))
    opened = mock.Mock(wraps=parquet_source.parquet_open)
    with mock.patch.object(parquet_source, "parquet_open", opened):
        again = inspect_table("file", str(folder), {}, known=recorded.files)
    assert opened.call_count == 2  # the first file (its schema) and the changed one
    assert [f.rows for f in again.files] == [10, 11, 7]
    assert again == inspect_table("file", str(folder), {})
