"""The array store on a local directory: what goes in comes out, by rows, blocks and ranges;
its hashes are of the raw little-endian bytes; deleting, listing, the health check and the
start-up sweep do what they say."""

import hashlib
import os
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.store.array_store import ArrayStore, StoreUnavailable, sweep_orphans
from app.store.writers import MAX_CHUNK_BYTES

CHUNK = 7  # small and odd, so tables of a few dozen rows span several partial chunks


def _blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _table(rows: int, columns: int, dtype: str, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, columns)).astype(dtype)


@pytest.fixture
def store(tmp_path: Path) -> ArrayStore:
    return ArrayStore(tmp_path / "arrays")


# -- whole arrays and row writers -----------------------------------------------------------

SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 4]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rows", SIZES)
def test_a_table_round_trips_with_its_metadata(store: ArrayStore, rows: int, dtype: str) -> None:
    table = _table(rows, 3, dtype, seed=rows)
    info = store.write("datasets/1-aa/features.x", table, chunk_rows=CHUNK)
    back = store.read("datasets/1-aa/features.x")
    assert back.dtype == np.dtype(dtype)
    assert back.shape == (rows, 3)
    np.testing.assert_array_equal(back, table)
    assert info.key == "datasets/1-aa/features.x"
    assert info.shape == (rows, 3)
    assert info.dtype == dtype
    # Never a chunk longer than the array: zarr would pad it to its full length.
    assert info.chunk_rows == max(1, min(rows, CHUNK))
    assert info.nbytes == table.nbytes
    assert info.content_hash == _blake(table.astype(f"<{table.dtype.char}").tobytes())
    assert store.shape("datasets/1-aa/features.x") == (rows, 3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rows", [1, CHUNK, CHUNK + 1, 5 * CHUNK + 3])
@pytest.mark.parametrize("seed", range(4))
def test_rows_appended_in_random_blocks_equal_the_whole_array(
    store: ArrayStore, rows: int, dtype: str, seed: int
) -> None:
    table = _table(rows, 4, dtype, seed=seed)
    rng = np.random.default_rng(100 + seed)
    writer = store.row_writer("t/blocks", n_columns=4, dtype=dtype, chunk_rows=CHUNK)
    at = 0
    while at < rows:
        size = int(rng.integers(0, 2 * CHUNK + 2))  # empty, partial and multi-chunk blocks
        writer.append(table[at : at + size])
        at += size
        assert writer.rows == min(at, rows)
    info = writer.close()
    whole = store.write("t/whole", table, chunk_rows=CHUNK)
    np.testing.assert_array_equal(store.read("t/blocks"), table)
    assert info.shape == whole.shape == (rows, 4)
    assert info.content_hash == whole.content_hash == _blake(table.tobytes())


def test_a_wide_table_gets_fewer_rows_per_chunk_not_a_giant_chunk(store: ArrayStore) -> None:
    columns = MAX_CHUNK_BYTES // 8 // 3 + 1  # three rows of float64 exceed the chunk bound
    table = _table(7, columns, "float64", seed=0)
    writer = store.row_writer("t/wide", n_columns=columns, dtype="float64", chunk_rows=65_536)
    writer.append(table)
    info = writer.close()
    assert info.chunk_rows == 2
    assert [block.shape[0] for block in store.iter_blocks("t/wide")] == [2, 2, 2, 1]
    np.testing.assert_array_equal(store.read("t/wide"), table)
    assert info.content_hash == _blake(table.tobytes())  # the bytes, however they are cut


def test_a_row_writer_refuses_rows_of_another_width(store: ArrayStore) -> None:
    writer = store.row_writer("t/w", n_columns=3, dtype="float64", chunk_rows=CHUNK)
    with pytest.raises(ValueError, match="3 columns"):
        writer.append(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="3 columns"):
        writer.append(np.zeros(3))


class _SlowArray:
    """A stored array whose chunk writes wait for ``released`` (or fail when ``error``),
    noting the thread each write ran on."""

    def __init__(self, array: Any, error: Exception | None = None) -> None:
        self.array, self.error = array, error
        self.released = threading.Event()
        self.threads: list[str] = []

    def __setitem__(self, rows: slice, block: np.ndarray) -> None:
        self.threads.append(threading.current_thread().name)
        self.released.wait(10)
        if self.error is not None:
            raise self.error
        self.array[rows] = block

    def __getattr__(self, name: str) -> Any:
        return getattr(self.array, name)


def test_whole_chunks_are_written_behind_the_caller_and_in_order(store: ArrayStore) -> None:
    table = _table(5 * CHUNK + 3, 2, "float64")
    writer = store.row_writer("t/behind", n_columns=2, dtype="float64", chunk_rows=CHUNK)
    slow = _SlowArray(writer._array)
    writer._array = slow
    writer.append(table[: 2 * CHUNK])  # two chunks handed over: the caller does not wait
    assert slow.threads == [] or slow.threads[0].startswith("store-write")
    slow.released.set()
    writer.append(table[2 * CHUNK :])
    info = writer.close()
    np.testing.assert_array_equal(store.read("t/behind"), table)
    assert info.content_hash == _blake(table.tobytes())
    assert [t.startswith("store-write") for t in slow.threads] == [True, True, False]


def test_a_failed_chunk_write_surfaces_at_the_next_append_and_at_close(
    store: ArrayStore,
) -> None:
    for last_call in ("append", "close"):
        writer = store.row_writer(f"t/{last_call}", n_columns=2, dtype="float64", chunk_rows=2)
        slow = _SlowArray(writer._array, OSError("disk full"))
        slow.released.set()
        writer._array = slow
        writer.append(np.zeros((2, 2)))  # in flight; it fails on its thread
        with pytest.raises(StoreUnavailable, match="disk full"):
            if last_call == "append":
                writer.append(np.zeros((2, 2)))
            else:
                writer.close()
        assert writer._thread is None  # stopped: nothing more is written


def test_an_aborted_writer_finishes_its_write_in_flight_first(store: ArrayStore) -> None:
    """So a rollback that deletes the array after the abort deletes it for good."""
    writer = store.row_writer("gone/t", n_columns=2, dtype="float64", chunk_rows=CHUNK)
    slow = _SlowArray(writer._array)
    writer._array = slow
    writer.append(_table(CHUNK, 2, "float64"))
    threading.Timer(0.2, slow.released.set).start()
    writer.abort()
    assert slow.released.is_set() and writer._thread is None
    store.delete("gone")
    time.sleep(0.3)
    assert not (Path(store.location) / "gone").exists()


def test_one_dimensional_int32_arrays_round_trip(store: ArrayStore) -> None:
    codes = np.arange(-5, 3 * CHUNK + 2, dtype=np.int32)
    info = store.write("d/ground_truth", codes, chunk_rows=CHUNK)
    back = store.read("d/ground_truth")
    assert back.dtype == np.int32
    np.testing.assert_array_equal(back, codes)
    assert info.shape == (codes.size,)
    assert info.content_hash == _blake(codes.astype("<i4").tobytes())


# -- ranges and blocks ----------------------------------------------------------------------

ROWS = 4 * CHUNK + 3


@pytest.fixture
def stored_table(store: ArrayStore) -> np.ndarray:
    table = _table(ROWS, 2, "float64", seed=7)
    store.write("r/t", table, chunk_rows=CHUNK)
    return table


def test_every_range_reads_like_numpy_slicing(store: ArrayStore, stored_table: np.ndarray) -> None:
    for start in [*range(0, ROWS + 2, 2), CHUNK - 1, CHUNK + 1, ROWS - 1]:
        for stop in [*range(start, ROWS + 3), None]:
            np.testing.assert_array_equal(
                store.read("r/t", start, stop), stored_table[start:stop], err_msg=f"{start}:{stop}"
            )


def test_blocks_are_the_stored_chunks_and_concatenate_to_the_array(
    store: ArrayStore, stored_table: np.ndarray
) -> None:
    blocks = list(store.iter_blocks("r/t"))
    assert [len(b) for b in blocks] == [CHUNK] * 4 + [3]
    np.testing.assert_array_equal(np.concatenate(blocks), stored_table)


@pytest.mark.parametrize(
    ("start", "stop"),
    [(0, None), (0, ROWS), (3, None), (CHUNK, 2 * CHUNK), (CHUNK - 1, CHUNK + 1), (5, 6), (0, 100)],
)
def test_blocks_of_a_range_stay_within_chunks_and_concatenate_to_the_slice(
    store: ArrayStore, stored_table: np.ndarray, start: int, stop: int | None
) -> None:
    blocks = list(store.iter_blocks("r/t", start, stop))
    np.testing.assert_array_equal(np.concatenate(blocks), stored_table[start:stop])
    at = start
    for block in blocks:  # each block is one chunk's part of the range: no boundary crossed
        assert len(block) > 0
        assert at // CHUNK == (at + len(block) - 1) // CHUNK
        at += len(block)


def test_an_empty_range_yields_no_blocks(store: ArrayStore, stored_table: np.ndarray) -> None:
    assert list(store.iter_blocks("r/t", ROWS, None)) == []
    assert list(store.iter_blocks("r/t", 5, 5)) == []
    assert list(store.iter_blocks("r/t", ROWS + 10, None)) == []


def test_an_empty_array_reads_as_empty(store: ArrayStore) -> None:
    store.write("r/empty", np.zeros((0, 3), dtype=np.float32), chunk_rows=CHUNK)
    assert store.read("r/empty").shape == (0, 3)
    assert store.read("r/empty").dtype == np.float32
    assert list(store.iter_blocks("r/empty")) == []


def test_reading_a_missing_key_is_file_not_found(store: ArrayStore) -> None:
    with pytest.raises(FileNotFoundError):
        store.read("nothing/here")


@given(
    rows=st.integers(0, 3 * CHUNK + 1),
    cuts=st.lists(st.integers(0, 3 * CHUNK + 1), max_size=6),
    start=st.integers(0, 3 * CHUNK + 2),
    length=st.integers(0, 3 * CHUNK + 2),
)
def test_any_blocking_reads_back_any_range(
    tmp_path_factory: pytest.TempPathFactory, rows: int, cuts: list[int], start: int, length: int
) -> None:
    store = ArrayStore(tmp_path_factory.mktemp("hyp"))
    table = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2)
    writer = store.row_writer("h", n_columns=2, dtype="float64", chunk_rows=CHUNK)
    bounds = sorted({0, rows, *(c for c in cuts if c <= rows)})
    for lo, hi in pairwise(bounds):
        writer.append(table[lo:hi])
    info = writer.close()
    assert info.content_hash == _blake(table.tobytes())
    np.testing.assert_array_equal(store.read("h"), table)
    np.testing.assert_array_equal(store.read("h", start, start + length), table[start:][:length])


# -- byte order -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4"])
def test_a_big_endian_array_is_stored_little_endian_with_equal_values(
    store: ArrayStore, dtype: str
) -> None:
    values = (np.arange(2 * CHUNK + 3) * 1.5 - 4).reshape(-1, 1).astype(dtype)
    info = store.write("e/big", values, chunk_rows=CHUNK)
    back = store.read("e/big")
    little = np.dtype(dtype).newbyteorder("<")
    assert back.dtype == little
    assert back.dtype.byteorder in ("<", "=")  # native on a little-endian machine
    np.testing.assert_array_equal(back, values)
    assert info.dtype == little.name
    assert info.content_hash == _blake(values.astype(little).tobytes())
    assert info.content_hash != _blake(values.tobytes())  # not the big-endian bytes


# -- strings and bytes ----------------------------------------------------------------------

STRINGS = ["a", "", "héllo", "日本語", "", "🙂 emoji", "x" * 40, "tab\tand\nnewline", "", "z"] * 3


@pytest.mark.parametrize("chunk_rows", [1, 4, len(STRINGS), 1000])
def test_strings_round_trip_with_unicode_and_empty_ones(store: ArrayStore, chunk_rows: int) -> None:
    info = store.write_strings("s/ids", iter(STRINGS), chunk_rows=chunk_rows)
    assert store.read_strings("s/ids") == STRINGS
    assert info.shape == (len(STRINGS),)
    assert info.dtype == "utf8"
    encoded = [s.encode() for s in STRINGS]
    assert info.nbytes == sum(map(len, encoded)) + 8 * (len(STRINGS) + 1)
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype("<i8")
    expected = _blake(f"{_blake(offsets.tobytes())}{_blake(b''.join(encoded))}".encode())
    assert info.content_hash == expected


def test_every_range_of_strings_reads_like_list_slicing(store: ArrayStore) -> None:
    store.write_strings("s/ids", STRINGS, chunk_rows=4)
    n = len(STRINGS)
    # Starts and stops on, beside and between chunk boundaries, and past the end.
    for start in (0, 1, 3, 4, 5, 11, 12, n - 1, n, n + 1):
        for stop in (start, start + 1, start + 4, start + 9, n - 1, n, n + 2, None):
            assert store.read_strings("s/ids", start, stop) == STRINGS[start:stop], (start, stop)


def test_no_strings_round_trip(store: ArrayStore) -> None:
    info = store.write_strings("s/none", [], chunk_rows=4)
    assert info.shape == (0,)
    assert store.read_strings("s/none") == []
    assert store.read_strings("s/none", 0, 5) == []


@pytest.mark.parametrize("size", [0, 1, 1000, 70_001])
def test_bytes_round_trip(store: ArrayStore, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    info = store.write_bytes("b/image", data)
    assert store.read_bytes("b/image") == data
    assert info.shape == (size,)
    assert info.dtype == "uint8"
    assert info.nbytes == size
    assert info.content_hash == _blake(data)


# -- deleting and listing -------------------------------------------------------------------


def test_delete_removes_a_prefix_and_nothing_else(store: ArrayStore, tmp_path: Path) -> None:
    store.write("datasets/1-aa/features.x", np.ones((3, 2)), chunk_rows=CHUNK)
    store.write_strings("datasets/1-aa/item_ids.y", ["p", "q", "r"], chunk_rows=CHUNK)
    store.write("datasets/2-bb/features.x", np.zeros((3, 2)), chunk_rows=CHUNK)
    store.delete("datasets/1-aa")
    assert not (tmp_path / "arrays" / "datasets" / "1-aa").exists()
    with pytest.raises(FileNotFoundError):
        store.read("datasets/1-aa/features.x")
    np.testing.assert_array_equal(store.read("datasets/2-bb/features.x"), np.zeros((3, 2)))
    assert set(store.children("datasets")) == {"2-bb"}


def test_delete_of_one_array_keeps_its_siblings(store: ArrayStore) -> None:
    store.write("d/a.1", np.arange(3), chunk_rows=CHUNK)
    store.write("d/a.2", np.arange(4), chunk_rows=CHUNK)
    store.delete("d/a.1")
    assert set(store.children("d")) == {"a.2"}
    np.testing.assert_array_equal(store.read("d/a.2"), np.arange(4))


def test_delete_is_silent_when_absent(store: ArrayStore) -> None:
    store.delete("datasets/never-written")
    store.write("d/a", np.arange(3), chunk_rows=CHUNK)
    store.delete("d/a")
    store.delete("d/a")  # twice
    store.delete("d/a/deeper/still")


def test_children_lists_directories_with_mtimes_not_metadata(
    store: ArrayStore, tmp_path: Path
) -> None:
    before = time.time()
    store.write("datasets/1-aa/features.x", np.ones((2, 2)), chunk_rows=CHUNK)
    store.write_strings("datasets/1-aa/item_ids.y", ["a", "b"], chunk_rows=CHUNK)
    store.write("datasets/2-bb/features.x", np.ones((2, 2)), chunk_rows=CHUNK)
    assert (tmp_path / "arrays" / "datasets" / "zarr.json").exists()  # a group's metadata...
    children = store.children("datasets")
    assert set(children) == {"1-aa", "2-bb"}  # ...is not a child
    assert all(before - 5 <= mtime <= time.time() + 5 for mtime in children.values())
    assert set(store.children("datasets/1-aa")) == {"features.x", "item_ids.y"}
    assert set(store.children("datasets/1-aa/item_ids.y")) == {"offsets", "bytes"}
    assert store.children("runs") == {}  # absent: nothing, no error


# -- the health check -----------------------------------------------------------------------


def test_check_passes_on_a_writable_directory_and_leaves_no_probe(tmp_path: Path) -> None:
    store = ArrayStore(tmp_path / "fresh" / "arrays")  # created on first use
    store.check()
    assert (tmp_path / "fresh" / "arrays").is_dir()
    assert store.children("health") == {}


def test_check_fails_where_no_directory_can_be(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = ArrayStore(tmp_path / "file" / "arrays")
    with pytest.raises(StoreUnavailable, match="arrays"):
        store.check()


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only directories"
)
def test_check_fails_on_a_read_only_directory(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o555)
    try:
        with pytest.raises(StoreUnavailable):
            ArrayStore(root).check()
    finally:
        root.chmod(0o755)


def test_check_fails_on_an_unknown_url_scheme() -> None:
    with pytest.raises(StoreUnavailable, match="nope://x"):
        ArrayStore("nope://x").check()


def test_file_urls_are_local_directories(tmp_path: Path) -> None:
    store = ArrayStore(f"file://{tmp_path / 'viaurl'}")
    store.write("a", np.arange(5), chunk_rows=2)
    assert (tmp_path / "viaurl" / "a" / "zarr.json").exists()
    np.testing.assert_array_equal(ArrayStore(tmp_path / "viaurl").read("a"), np.arange(5))


# -- the start-up sweep ---------------------------------------------------------------------


def test_sweep_removes_unreferenced_datasets_and_old_unreferenced_runs(
    store: ArrayStore, tmp_path: Path
) -> None:
    for prefix in ("datasets/1-kept", "datasets/2-orphan", "runs/3-kept", "runs/4-young"):
        store.write(f"{prefix}/labels.a", np.arange(4, dtype=np.int32), chunk_rows=CHUNK)
    store.write("runs/5-old/labels.a", np.arange(4, dtype=np.int32), chunk_rows=CHUNK)
    store.write("runs/6-old-kept/labels.a", np.arange(4, dtype=np.int32), chunk_rows=CHUNK)
    two_hours_ago = time.time() - 7200
    for name in ("5-old", "6-old-kept"):
        os.utime(tmp_path / "arrays" / "runs" / name, (two_hours_ago, two_hours_ago))
    referenced = {"datasets/1-kept", "runs/3-kept", "runs/6-old-kept"}

    removed = sweep_orphans(store, referenced, runs_older_than_s=3600)

    assert removed == 2
    assert set(store.children("datasets")) == {"1-kept"}
    assert set(store.children("runs")) == {"3-kept", "4-young", "6-old-kept"}
    for prefix in ("datasets/1-kept", "runs/3-kept", "runs/4-young", "runs/6-old-kept"):
        np.testing.assert_array_equal(store.read(f"{prefix}/labels.a"), np.arange(4))
    # Once the young run is old enough, it goes too; a second sweep finds nothing else.
    assert sweep_orphans(store, referenced, runs_older_than_s=0) == 1
    assert set(store.children("runs")) == {"3-kept", "6-old-kept"}
    assert sweep_orphans(store, referenced, runs_older_than_s=0) == 0


def test_sweep_of_an_empty_store_removes_nothing(store: ArrayStore) -> None:
    assert sweep_orphans(store, set(), runs_older_than_s=3600) == 0
