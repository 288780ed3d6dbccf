"""Rows a pass task read from a source, kept on disk for the next pass
(`app/store/sources/block_cache.py`): read once, named by what was read (a changed object is
read again), bounded (the blocks used longest ago go first), and never needed."""

import os
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.store.sources import block_cache, tables
from app.store.sources.tables import inspect_table


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SOURCE_CACHE_BYTES", raising=False)
    return tmp_path / "cache" / "workbench-source-blocks"


def _counting(rows: np.ndarray) -> tuple[list[int], object]:
    calls: list[int] = []

    def read() -> np.ndarray:
        calls.append(1)
        return rows.copy()

    return calls, read


def test_a_block_is_read_once_and_then_from_disk(cache: Path) -> None:
    rows = np.arange(60, dtype=np.float32).reshape(20, 3)
    calls, read = _counting(rows)
    for _ in range(3):
        np.testing.assert_array_equal(block_cache.cached("a", read), rows)  # type: ignore[arg-type]
    assert len(calls) == 1 and [p.name for p in cache.iterdir()] == ["a.npy"]
    np.testing.assert_array_equal(block_cache.cached("b", read), rows)  # type: ignore[arg-type]
    assert len(calls) == 2


def test_a_damaged_block_is_read_again(cache: Path) -> None:
    rows = np.ones((4, 2), dtype=np.float32)
    calls, read = _counting(rows)
    block_cache.cached("a", read)  # type: ignore[arg-type]
    (cache / "a.npy").write_bytes(b"not an array")
    np.testing.assert_array_equal(block_cache.cached("a", read), rows)  # type: ignore[arg-type]
    assert len(calls) == 2
    np.testing.assert_array_equal(np.load(cache / "a.npy"), rows)


def test_the_blocks_used_longest_ago_go_past_the_budget(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = np.zeros((1000, 1), dtype=np.float32)  # 4,000 bytes, 4,128 as a file
    monkeypatch.setenv("SOURCE_CACHE_BYTES", "10000")  # two blocks fit
    _, read = _counting(rows)
    for name in ("a", "b"):
        block_cache.cached(name, read)  # type: ignore[arg-type]
    os.utime(cache / "a.npy", (1, 1))
    os.utime(cache / "b.npy", (2, 2))
    block_cache.cached("a", read)  # type: ignore[arg-type]  # read: now the newest
    block_cache.cached("c", read)  # type: ignore[arg-type]
    assert sorted(p.name for p in cache.iterdir()) == ["a.npy", "c.npy"]


def test_a_budget_of_nothing_keeps_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_CACHE_BYTES", "0")
    calls, read = _counting(np.ones((3, 3), dtype=np.float32))
    block_cache.cached("a", read)  # type: ignore[arg-type]
    block_cache.cached("a", read)  # type: ignore[arg-type]
    assert len(calls) == 2 and not cache.exists()


def test_passes_over_a_source_read_it_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.parquet"
    first = np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)
    pq.write_table(pa.table({"a": first[:, 0], "b": first[:, 1]}), path, row_group_size=16)
    reads: list[tuple[int, int]] = []
    real = tables._read_rows

    def counted(*args):  # type: ignore[no-untyped-def]
        reads.append((args[6], args[7]))
        return real(*args)

    monkeypatch.setattr(tables, "_read_rows", counted)
    table = inspect_table("file", str(path), {})
    with dask.config.set(scheduler="synchronous"):
        for _ in range(3):  # three passes
            np.testing.assert_array_equal(table.dask_array(20).compute(), first)
    assert sorted(reads) == [(0, 20), (20, 40), (40, 50)]

    # The object rewritten: another version, read again, its new rows.
    second = first + 1
    pq.write_table(pa.table({"a": second[:, 0], "b": second[:, 1]}), path, row_group_size=16)
    os.utime(path, (10**9, 10**9))  # a version no earlier write had
    changed = inspect_table("file", str(path), {})
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(changed.dask_array(20).compute(), second)
    assert len(reads) == 6
