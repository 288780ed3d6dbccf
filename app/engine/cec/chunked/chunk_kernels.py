"""What one worker does to one chunk of rows in a data-parallel CEC / CEC-IB pass.

A pass freezes every cluster's parameters (weight p_c, mean m_c, the family's covariance S_c
and, with labels, the share q_c(z) of each category among its labeled members). Each item goes
to the cluster of least cost

    -ln p_c + (d/2) ln(2 pi) + (1/2) ln det S_c + (1/2) |P_c (x - m_c)|^2 + label_cost[c, z]

(``P_c`` the family's lower-triangular precision factor: L^-1 for ``full``, diagonal for the
others), the per-chunk statistics of that partition are summed, and the caller recomputes the
parameters from their totals. Statistics are centred on the frozen means (``shift``) so the
scatter of a far-away cluster keeps its digits when chunks are added.

Chunk polishing (``polish_chunk``) runs Hartigan moves of the chunk's own items against the
global statistics, as the sequential engine's sweep does against the whole data set.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.core.cec_state import ClusterState
from app.engine.core.hartigan import cheapest_move, extract_point, insert_point, point_move_deltas

RowsArray = NDArray[np.floating[Any]]  # a chunk's rows: float64, or float32 as stored

LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(nogil=True, cache=True)
def assign_chunk(
    X: FloatArray,
    categories: IntArray,
    const: FloatArray,
    means: FloatArray,
    factor: FloatArray,
    label_cost: FloatArray,
    alive: BoolArray,
    assign: IntArray,
    min_precision: FloatArray,
    max_precision: FloatArray,
) -> None:
    """``assign[i]``: the live cluster of least cost for row i (first on ties; -1 when no
    cluster lives).

    ``const[c]`` = -ln p_c + (d/2) ln 2 pi + (1/2) ln det S_c; ``factor`` the (k, d, d)
    lower-triangular precision factors; ``label_cost`` (k, m) the cost of a labeled item of
    each category (ignored for unlabeled rows, ``categories[i] < 0``); ``min_precision[c]``
    at most the smallest eigenvalue of S_c^-1 and ``max_precision[c]`` at least its largest.
    """
    k, d = means.shape
    m = label_cost.shape[1]
    _sweep(
        X, categories, const, means, factor, label_cost, alive, min_precision, max_precision,
        1.0, assign,
        False, np.zeros(k), np.zeros((k, d)), np.zeros((k, d, d)), np.zeros((k, m)),
    )  # fmt: skip


@numba.njit(nogil=True, cache=True)
def pass_rows(
    X: RowsArray,
    categories: IntArray,
    const: FloatArray,
    means: FloatArray,
    factor: FloatArray,
    label_cost: FloatArray,
    alive: BoolArray,
    min_precision: FloatArray,
    max_precision: FloatArray,
    labeled_weight: float,
    assign: IntArray,
    count: FloatArray,
    s1: FloatArray,
    s2: FloatArray,
    label_counts: FloatArray,
) -> None:
    """``assign_chunk`` and ``accumulate_chunk`` (centred on the frozen ``means``) in one
    sweep over the rows, each row read once while it is in cache; X float32 or float64 (a
    chunk of a float32 store is not copied to float64 first)."""
    _sweep(
        X, categories, const, means, factor, label_cost, alive, min_precision, max_precision,
        labeled_weight, assign, True, count, s1, s2, label_counts,
    )  # fmt: skip


# One fused kernel on purpose, not a helper per step: a row's bounds, candidate scan and exact
# costs are written out in one loop over the rows, with the work arrays allocated here. Helpers
# handed those arrays may see them alias, and numba then keeps the distance loop over clusters
# scalar: the assignment measured 1.8x slower (docs/distributed.md, "What halved a pass").
@numba.njit(nogil=True, cache=True)
def _sweep(
    X: RowsArray,
    categories: IntArray,
    const: FloatArray,
    means: FloatArray,
    factor: FloatArray,
    label_cost: FloatArray,
    alive: BoolArray,
    min_precision: FloatArray,
    max_precision: FloatArray,
    labeled_weight: float,
    assign: IntArray,
    accumulate: bool,
    count: FloatArray,
    s1: FloatArray,
    s2: FloatArray,
    label_counts: FloatArray,
) -> None:
    """Each row to its live cluster of least cost (first on ties, -1 when none lives), and
    with ``accumulate`` into that cluster's sums (``accumulate_chunk``, centred on the frozen
    means: a second sweep, as fast here as summing each row as it is placed).

    A lower bound of every cluster's cost, ``base + |x - m_c|^2 min_precision / 2`` (O(d),
    against O(d^2) for the exact cost), decides which exact costs to compute: none when the
    least bound's cluster is cheaper even at its upper bound (``max_precision`` for
    ``min_precision``) than every other at its lower bound (most rows on separated clusters);
    else the least bound's first, then every cluster whose bound can still beat the best cost
    found (usually one or two exact costs per row, not k).

    One function with its work arrays allocated here, not a per-row helper given them: arrays
    that arrive as arguments (or rows of one array) may alias, and the compiler then keeps
    the distance loop over clusters scalar (measured: the assignment 1.8x slower).
    """
    n, d = X.shape
    k = const.shape[0]
    means_t = np.ascontiguousarray(means.T)  # the distance loop runs over clusters (SIMD)
    # base_of[z + 1, c]: a row of category z's cost in c before the distance term; +inf for
    # a dead cluster, so the bounds need no branch.
    base_of = np.empty((label_cost.shape[1] + 1, k))
    for c in range(k):
        base_of[0, c] = const[c] if alive[c] else math.inf
        for z in range(label_cost.shape[1]):
            base_of[z + 1, c] = const[c] + label_cost[c, z] if alive[c] else math.inf
    norm2 = np.empty(k)
    lower = np.empty(k)
    u = np.empty(d)
    for i in range(n):
        z = categories[i]
        base = base_of[z + 1 if z >= 0 else 0]
        for c in range(k):
            norm2[c] = 0.0
        for t in range(d):
            x = np.float64(X[i, t])
            for c in range(k):
                diff = x - means_t[t, c]
                norm2[c] += diff * diff
        for c in range(k):
            lower[c] = base[c] + 0.5 * norm2[c] * min_precision[c]
        first = -1
        least = math.inf
        second = math.inf  # the second least bound
        for c in range(k):
            if lower[c] < least:
                second = least
                least = lower[c]
                first = c
            elif lower[c] < second:
                second = lower[c]
        if first >= 0 and base[first] + 0.5 * norm2[first] * max_precision[first] < second:
            assign[i] = first  # at its worst still cheaper than any other at its best
            continue
        best = math.inf
        best_c = -1
        # The cluster of least bound first, then (when the second least bound does not rule
        # them all out) every other whose bound can still win.
        for step in range(k + 1 if first >= 0 else 0):
            c = first if step == 0 else step - 1
            if step == 1 and second > best:
                break
            if (step > 0 and c == first) or not lower[c] <= best:
                continue
            b = base[c]
            for t in range(d):
                u[t] = X[i, t] - means[c, t]
            q = 0.0
            for t in range(d):
                acc = 0.0
                for s in range(t + 1):
                    acc += factor[c, t, s] * u[s]
                q += acc * acc
                if b + 0.5 * q > best:  # partial sums only grow: this one cannot win
                    break
            cost = b + 0.5 * q
            if cost < best or (cost == best and c < best_c):
                best = cost
                best_c = c
        assign[i] = best_c
    if accumulate:
        accumulate_chunk(
            X, categories, labeled_weight, assign, means, count, s1, s2, label_counts
        )  # fmt: skip


@numba.njit(nogil=True, cache=True)
def accumulate_chunk(
    X: RowsArray,
    categories: IntArray,
    labeled_weight: float,
    assign: IntArray,
    shift: FloatArray,
    count: FloatArray,
    s1: FloatArray,
    s2: FloatArray,
    label_counts: FloatArray,
) -> None:
    """Add the chunk's weighted statistics per cluster: weight, sum of (x - shift_c) and the
    sum of (x - shift_c)(x - shift_c)^T (the whole square: a triangle's inner loop does not
    vectorise); labeled rows weigh ``labeled_weight`` and add to ``label_counts[c, z]``; rows
    with ``assign[i] < 0`` add nothing. ``u`` is allocated here for the same reason as
    ``_sweep``'s work arrays (an argument may alias ``s2``: measured 3x slower)."""
    n, d = X.shape
    u = np.empty(d)
    for i in range(n):
        c = assign[i]
        if c < 0:
            continue
        z = categories[i]
        w = labeled_weight if z >= 0 else 1.0
        count[c] += w
        if z >= 0:
            label_counts[c, z] += w
        for t in range(d):
            u[t] = X[i, t] - shift[c, t]
            s1[c, t] += w * u[t]
        for t in range(d):
            wu = w * u[t]
            for s in range(d):
                s2[c, t, s] += wu * u[s]


@numba.njit(nogil=True, cache=True)
def polish_chunk(
    X: FloatArray,
    categories: IntArray,
    movable: BoolArray,
    assign: IntArray,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    min_size: float,
    tol: float,
) -> int:
    """One Hartigan sweep over the chunk's movable rows against the global ``state`` (sizes in
    the whole data's units, ``n_total`` its weight); returns the moves made. A move that would
    take its source cluster under ``min_size`` is not made: dissolving a cluster needs all its
    items, which one chunk does not hold."""
    n, d = X.shape
    k = state.size.shape[0]
    delta = np.empty(k)
    u = np.empty(d)
    work = np.empty(3 * d)
    changed_at = np.zeros(k, dtype=np.int64)
    moves = 0
    for i in range(n):
        if not movable[i]:
            continue
        a = assign[i]
        if state.size[a] - 1.0 < min_size:
            continue
        z = categories[i]
        point_move_deltas(X, i, z, a, state, family, n_total, beta, -tol, changed_at, -1, delta, u)
        b = cheapest_move(delta, a, tol)
        if b == a:
            continue
        extract_point(X[i], z, a, state, family, n_total, beta, work)
        insert_point(X[i], z, b, state, family, n_total, beta, work)
        assign[i] = b
        moves += 1
    return moves
