"""The functions Dask runs on one chunk of rows: scan, pass, final labels, predict.

Each is a plain module-level function of a chunk and small frozen inputs, so a task that is
retried on another worker (a worker lost mid-fit) returns the same answer: nothing here keeps
state between passes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.core.cec_state import ClusterState
from app.engine.core.density import assign_by_density
from app.engine.distributed.chunk_kernels import (
    accumulate_chunk,
    assign_chunk,
    pass_rows,
    polish_chunk,
)
from app.engine.distributed.cluster_totals import Frozen, Totals

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Smallest energy decrease that counts as a Hartigan move (as cec_fit.MOVE_TOL).
MOVE_TOL = 1e-12


@dataclass(frozen=True)
class Polish:
    """Hartigan moves inside each chunk against the global statistics."""

    state: ClusterState
    family: int
    n_total: float
    beta: float
    min_size: float
    move_labeled: bool  # labeled rows that weigh more than 1 stay where the pass put them


@dataclass(frozen=True)
class ChunkRule:
    """How a pass (and the final labels) place a chunk's rows."""

    frozen: Frozen
    polish: Polish | None = None
    projection: Any = None  # the start's PCA when X's covariance was singular


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


def categories_of(y_block: Any, classes: IntArray) -> IntArray:
    """Labels as category indices 0..m-1 (position in ``classes``), -1 unlabeled."""
    y = np.asarray(y_block).astype(np.int64)
    out = np.full(y.shape[0], -1, dtype=np.int64)
    known = y >= 0
    out[known] = np.searchsorted(classes, y[known])
    return out


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


def _place(data: FloatArray, categories: IntArray, rule: ChunkRule) -> IntArray:
    frozen = rule.frozen
    assign = np.empty(data.shape[0], dtype=np.int64)
    assign_chunk(
        data,
        categories,
        frozen.const,
        frozen.means,
        frozen.factor,
        frozen.label_cost,
        frozen.alive,
        assign,
        frozen.min_precision,
        frozen.max_precision,
    )
    polish = rule.polish
    if polish is not None:
        state = copy.deepcopy(polish.state)  # tasks on threads of one worker share the object
        movable = np.ones(data.shape[0], dtype=np.bool_)
        if not polish.move_labeled:
            movable &= categories < 0
        polish_chunk(
            data,
            categories,
            movable,
            assign,
            state,
            polish.family,
            polish.n_total,
            polish.beta,
            polish.min_size,
            MOVE_TOL,
        )
    return assign


def pass_chunk(
    block: Any,
    y_block: Any,
    classes: IntArray,
    rule: ChunkRule,
    labeled_weight: float,
) -> Totals:
    """One pass over a chunk: place its rows under ``rule`` and sum their statistics."""
    totals = Totals.zeros(rule.frozen.means, classes.shape[0])
    if rule.polish is None and rule.projection is None:
        # One sweep, each row read once, a float32 chunk as it is (no float64 copy).
        data = floats_of(block)
        frozen = rule.frozen
        pass_rows(
            data,
            _categories(y_block, classes, data.shape[0]),
            frozen.const,
            frozen.means,
            frozen.factor,
            frozen.label_cost,
            frozen.alive,
            frozen.min_precision,
            frozen.max_precision,
            labeled_weight,
            np.empty(data.shape[0], dtype=np.int64),
            totals.count,
            totals.s1,
            totals.s2,
            totals.label_counts,
        )
        return totals
    data = rows_of(block, rule.projection)
    categories = _categories(y_block, classes, data.shape[0])
    assign = _place(data, categories, rule)
    accumulate_chunk(
        data,
        categories,
        labeled_weight,
        assign,
        totals.shift,
        totals.count,
        totals.s1,
        totals.s2,
        totals.label_counts,
    )
    return totals


def labels_chunk(
    block: Any, y_block: Any, classes: IntArray, rule: ChunkRule, relabel: IntArray
) -> IntArray:
    """The fitted partition's cluster ids for a chunk (the last accepted pass, replayed)."""
    data = rows_of(block, rule.projection)
    categories = _categories(y_block, classes, data.shape[0])
    return relabel[_place(data, categories, rule)]


def predict_chunk(
    block: Any,
    weights: FloatArray,
    means: FloatArray,
    covariances: FloatArray,
    family: int,
    projection: Any = None,
) -> IntArray:
    """The CEC rule argmax_i p_i N(x; m_i, S_i) for a chunk's rows."""
    data = rows_of(block, projection)
    return assign_by_density(data, weights, means, covariances, family)


def _categories(y_block: Any, classes: IntArray, n: int) -> IntArray:
    if y_block is None:
        return np.full(n, -1, dtype=np.int64)
    return categories_of(y_block, classes)
