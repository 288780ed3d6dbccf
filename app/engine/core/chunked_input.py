"""A Dask array of rows (and its partial labels) as the data-parallel fit reads it.

One look at every chunk before any pass: the rows it holds, non-finite values (a clear error
naming the chunk, raised before the first pass), the labels' values, and a random sample of
rows for the start (all chunks contribute in proportion to their size; labeled rows are sampled
apart as well, so a few labels among millions of rows still reach the start).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.chunk_scan import ChunkScan, scan_chunk

# Rows the start is fitted on (at least SAMPLE_PER_CLUSTER per cluster), and labeled rows added.
SAMPLE_ROWS = 50_000
SAMPLE_PER_CLUSTER = 500
SAMPLE_LABELED = 10_000


def is_dask_array(X: object) -> bool:
    """Whether X is a ``dask.array.Array`` (without importing Dask when it is not)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


@dataclass
class ChunkedInput:
    blocks: list[Any]  # one Delayed per row chunk of X
    y_blocks: list[Any]  # one Delayed per row chunk of y, or Nones
    rows: list[int]
    classes: IntArray  # label values present, sorted
    n_labeled: int
    sample: FloatArray
    sample_y: IntArray | None  # None when the fit has no labels
    sample_index: IntArray  # the sampled rows' positions in X
    spread: float  # the largest standard deviation of a column (1 when every one is 0)

    @property
    def n_rows(self) -> int:
        return sum(self.rows)

    def row_range(self, chunk: int) -> tuple[int, int]:
        start = sum(self.rows[:chunk])
        return start, start + self.rows[chunk]


def as_rows(X: Any) -> Any:
    """X checked as a dask array of rows, its columns in one chunk."""
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array of rows, got a dask array of shape {X.shape}")
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.shape[0] < 2:
        raise ValueError(f"Found array with {X.shape[0]} sample(s); at least 2 are required")
    if X.shape[1] < 1:
        raise ValueError("Found array with 0 feature(s); at least 1 is required")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must hold numbers, got dtype {X.dtype}")
    return X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X


def _label_blocks(y: Any, X: Any) -> list[Any]:
    """y's row chunks, aligned with X's, held by the workers from the first look on: in-memory
    labels are sent once (``to_workers``), not inside every pass's task graph, and a dask
    array's chunks are read and kept once (``keep_on_workers``), not read again every pass
    (20M labels are 40 MB as int16; reading them as stored cost a pass a quarter of its time)."""
    rows = [int(r) for r in X.chunks[0]]
    if y is None:
        return [None] * len(rows)
    if not is_dask_array(y):
        y = np.asarray(y)
    if is_dask_array(y) and any(math.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}), got {y.shape}")
    if is_dask_array(y):
        import dask

        aligned = y if y.chunks[0] == X.chunks[0] else y.rechunk((X.chunks[0],))
        return keep_on_workers(
            [dask.delayed(compact_labels)(block) for block in aligned.to_delayed().ravel()]
        )
    y = compact_labels(y)
    bounds = np.cumsum([0, *rows])
    return to_workers([y[a:b] for a, b in itertools.pairwise(bounds)])


def compact_labels(y: Any) -> NDArray[Any]:
    """Integer labels in -1..32767 as int16 (2 bytes a row, not 8); others as they are (the
    scan refuses what is not a label, naming it)."""
    y = np.asarray(y)
    if y.dtype.kind in "iu" and y.size and y.min() >= -1 and y.max() < 2**15:
        return y.astype(np.int16)
    return y


def keep_on_workers(tasks: list[Any]) -> list[Any]:
    """Computed once and kept: persisted on a distributed cluster (a worker lost with one
    recomputes it from its recipe), computed into memory on the local schedulers."""
    import dask

    client = _current_client()
    if client is None:
        return list(dask.compute(*tasks))
    return list(client.persist(tasks))


def to_workers(parts: list[Any]) -> list[Any]:
    """In-memory inputs of every pass, sent to a distributed cluster once, not inside every
    pass's task graph; as they are on the local schedulers. Persisted, not scattered: the
    scheduler keeps each as a task whose recipe is the value itself, so a worker lost with
    it is no lost input (scattered data has no recipe, and its tasks fail)."""
    client = _current_client()
    if client is None:
        return parts
    import dask

    return list(client.persist([dask.delayed(part, traverse=False) for part in parts]))


def _current_client() -> Any:
    """The Dask distributed client that computes here, or None: no client, or the local
    schedulers chosen over it (``dask.config.set(scheduler="threads")``)."""
    try:
        from distributed.client import _get_global_client
    except ImportError:
        return None
    from dask.base import get_scheduler

    client = _get_global_client()
    if client is None or getattr(get_scheduler(), "__self__", None) is not client:
        return None
    return client


def _spread(scans: tuple[ChunkScan, ...]) -> float:
    """The largest column standard deviation, from the chunks' means and squared deviations
    (Chan et al.'s pairwise merge: no cancellation on data far from the origin)."""
    count, mean, m2 = 0, np.zeros_like(scans[0].mean), np.zeros_like(scans[0].m2)
    for s in scans:
        if s.rows == 0:
            continue
        total = count + s.rows
        delta = s.mean - mean
        mean = mean + delta * (s.rows / total)
        m2 = m2 + s.m2 + delta**2 * (count * s.rows / total)
        count = total
    return float(np.sqrt(m2 / max(count, 1)).max()) or 1.0


def scan(X: Any, y: Any, n_clusters: int, rng: np.random.RandomState) -> ChunkedInput:
    """Check X (and y) chunk by chunk and draw the start's sample; ValueError naming the
    first chunk with a non-finite value or a bad label."""
    import dask

    X = as_rows(X)
    rows = [int(r) for r in X.chunks[0]]
    n = sum(rows)
    blocks = list(X.to_delayed().ravel())
    y_blocks = _label_blocks(y, X)
    share = min(1.0, max(SAMPLE_ROWS, SAMPLE_PER_CLUSTER * n_clusters) / n)
    seeds = rng.randint(np.iinfo(np.int32).max, size=len(blocks))
    tasks = [
        dask.delayed(scan_chunk)(
            block, y_block, int(seed), math.ceil(share * r), math.ceil(SAMPLE_LABELED * r / n)
        )
        for block, y_block, seed, r in zip(blocks, y_blocks, seeds, rows, strict=True)
    ]
    scans = dask.compute(*tasks)
    start = 0
    for index, found in enumerate(scans):
        where = f"chunk {index} (rows {start} to {start + found.rows - 1})"
        if found.first_bad_row >= 0:
            raise ValueError(
                f"Input X contains NaN or infinity in {where}, first at row "
                f"{start + found.first_bad_row}; no pass was run"
            )
        if found.bad_label:
            raise ValueError(f"y: {found.bad_label}, in {where}")
        start += found.rows
    classes = np.unique(np.concatenate([s.classes for s in scans])).astype(np.int64)
    return ChunkedInput(
        blocks=blocks,
        y_blocks=y_blocks,
        rows=rows,
        classes=classes,
        n_labeled=sum(s.n_labeled for s in scans),
        sample=np.concatenate([s.sample for s in scans]),
        sample_y=None if y is None else np.concatenate([s.sample_y for s in scans]),
        spread=_spread(scans),
        sample_index=np.concatenate(
            [
                s.sample_rows + offset
                for s, offset in zip(scans, np.cumsum([0, *rows]), strict=False)
            ]
        ),
    )
