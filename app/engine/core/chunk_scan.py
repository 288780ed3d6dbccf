"""The first look a data-parallel fit takes at one chunk of rows, and the chunk's rows as the
passes read them; shared by every method's chunked path (CEC's and PPC's).

Plain module-level functions of a chunk, so a task retried on another worker returns the same
answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import FloatArray, IntArray


@dataclass(frozen=True)
class ChunkScan:
    """What the first look at a chunk finds: its size, its first non-finite row, its labels
    and a random sample of its rows for the start."""

    rows: int
    first_bad_row: int  # -1 when every value is finite
    bad_label: str  # "" when every label is an integer >= -1
    classes: IntArray  # the label values present (>= 0)
    n_labeled: int
    sample: FloatArray
    sample_y: IntArray
    sample_rows: IntArray  # the sampled rows' positions in the chunk
    mean: FloatArray  # per column, for the data's spread (merged by Chan's rule)
    m2: FloatArray  # per column, the sum of squared deviations from ``mean``


def floats_of(block: Any) -> NDArray[np.floating[Any]]:
    """A chunk's rows as C-ordered float32 or float64, copied only when they are not."""
    data = np.asarray(block)
    if data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    return np.ascontiguousarray(data)


def rows_of(block: Any, projection: Any = None) -> FloatArray:
    data = np.ascontiguousarray(np.asarray(block, dtype=np.float64))
    if projection is not None:
        data = np.ascontiguousarray(projection.transform(data))
    return data


def _bad_label(y: NDArray[Any]) -> str:
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            return "labels must be integers (-1 = unlabeled)"
    elif y.dtype.kind not in "iub":
        return f"labels must be integers (-1 = unlabeled), got dtype {y.dtype}"
    if y.size and y.min() < -1:
        return f"labels must be >= -1 (-1 = unlabeled), got {int(y.min())}"
    return ""


def scan_chunk(block: Any, y_block: Any, seed: int, take: int, take_labeled: int) -> ChunkScan:
    """Check a chunk and draw ``take`` uniform rows plus up to ``take_labeled`` labeled ones."""
    data = np.asarray(block)
    finite = np.isfinite(data).all(axis=1)
    first_bad = -1 if finite.all() else int(np.argmin(finite))
    y = np.asarray(y_block) if y_block is not None else np.full(data.shape[0], -1)
    bad = _bad_label(y)
    if first_bad >= 0 or bad:
        empty = np.empty((0, data.shape[1]))
        none, nothing = np.empty(0, np.int64), np.zeros(data.shape[1])
        return ChunkScan(
            data.shape[0], first_bad, bad, none, 0, empty, y[:0], none, nothing, nothing
        )
    y = y.astype(np.int64)
    labeled = np.flatnonzero(y >= 0)
    rng = np.random.RandomState(seed)
    uniform = rng.choice(data.shape[0], size=min(take, data.shape[0]), replace=False)
    extra = rng.choice(labeled, size=min(take_labeled, labeled.shape[0]), replace=False)
    rows = np.union1d(uniform, extra)
    return ChunkScan(
        rows=data.shape[0],
        first_bad_row=-1,
        bad_label="",
        classes=np.unique(y[labeled]),
        n_labeled=int(labeled.shape[0]),
        sample=np.asarray(data[rows], dtype=np.float64),
        sample_y=y[rows],
        sample_rows=rows.astype(np.int64),
        mean=data.mean(axis=0, dtype=np.float64),
        m2=data.var(axis=0, dtype=np.float64) * data.shape[0],
    )
