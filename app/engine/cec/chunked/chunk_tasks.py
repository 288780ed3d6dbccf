"""The functions Dask runs on one chunk of rows in a CEC pass: pass, final labels, predict.

Each is a plain module-level function of a chunk and small frozen inputs, so a task that is
retried on another worker (a worker lost mid-fit) returns the same answer: nothing here keeps
state between passes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.cec.chunked.chunk_kernels import (
    accumulate_chunk,
    assign_chunk,
    pass_rows,
    polish_chunk,
)
from app.engine.cec.chunked.cluster_totals import Frozen, Totals
from app.engine.core.cec_state import ClusterState
from app.engine.core.chunk_scan import floats_of, rows_of
from app.engine.core.density import assign_by_density

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


def categories_of(y_block: Any, classes: IntArray) -> IntArray:
    """Labels as category indices 0..m-1 (position in ``classes``), -1 unlabeled."""
    y = np.asarray(y_block).astype(np.int64)
    out = np.full(y.shape[0], -1, dtype=np.int64)
    known = y >= 0
    out[known] = np.searchsorted(classes, y[known])
    return out


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
