"""Rows a run's pass task read from a source, kept on this machine's disk for the next pass.

A data-parallel fit reads every row once per pass (5-20 passes), and a source read in place
costs far more per read than the store's chunks: every object fetched again over the network
(a whole object for each ranged GET on some S3 servers), every Parquet page decoded again. The
first pass keeps what each task read, as it was decoded (float32 rows), in a local file named
by what was read: the objects' versions, the columns, the rows. The later passes read that file.
A source that changed has other versions, so other names: a stale block is never read (and a
run on a changed source is refused before it starts anyway).

Bounded: past ``SOURCE_CACHE_BYTES`` (environment; default 2 GiB, 0 turns it off) the blocks
used longest ago are deleted. Each process that runs pass tasks (the server's threads, or each
Dask worker) keeps its own, under ``SOURCE_CACHE_DIR`` (default: the system's temporary
directory). Nothing in it is needed: a block deleted meanwhile is read from the source again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from app.store.sources.source_types import SourceFile

DEFAULT_BYTES = 2 * 1024**3
_lock = threading.Lock()


def cache_dir() -> Path:
    base = os.environ.get("SOURCE_CACHE_DIR") or tempfile.gettempdir()
    return Path(base) / "workbench-source-blocks"


def cache_bytes() -> int:
    raw = os.environ.get("SOURCE_CACHE_BYTES", "")
    try:
        return max(0, int(raw)) if raw.strip() else DEFAULT_BYTES
    except ValueError:
        return DEFAULT_BYTES


def block_name(
    format: str,
    files: Sequence[SourceFile],
    columns: Sequence[str],
    dtype: str,
    start: int,
    stop: int,
    first: int,
) -> str:
    """A name that changes with anything the rows depend on."""
    parts = [format, dtype, str(start), str(stop), str(first), *columns]
    parts += [f"{f.url}\0{f.version}\0{f.rows}\0{f.size}" for f in files]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]


def cached(name: str, read: Callable[[], np.ndarray]) -> np.ndarray:
    """The block kept under ``name``, or ``read()`` kept there for next time."""
    budget = cache_bytes()
    if budget == 0:
        return read()
    folder = cache_dir()
    path = folder / f"{name}.npy"
    try:
        rows = np.load(path, allow_pickle=False)
        os.utime(path)  # used now: evicted last
        return rows
    except (FileNotFoundError, ValueError, OSError):
        pass
    rows = read()
    if rows.nbytes > budget:
        return rows
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(path, rows)
        _evict(folder, budget)
    except OSError:  # a full or read-only disk: the run goes on reading the source
        pass
    return rows


def _write(path: Path, rows: np.ndarray) -> None:
    """Whole or absent: a reader never sees half a block, and a failed write leaves nothing."""
    part = tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False)  # noqa: SIM115
    try:
        with part:
            np.save(part, rows, allow_pickle=False)
        os.replace(part.name, path)
    except BaseException:
        Path(part.name).unlink(missing_ok=True)
        raise


def _evict(folder: Path, budget: int) -> None:
    """Delete the blocks used longest ago until the rest fit the budget."""
    with _lock:
        blocks = []
        for path in folder.glob("*.npy"):
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            blocks.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in blocks)
        for _, size, path in sorted(blocks):
            if total <= budget:
                break
            path.unlink(missing_ok=True)
            total -= size
