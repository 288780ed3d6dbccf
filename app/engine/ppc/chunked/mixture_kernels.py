"""A chunk's mixture E-step and M-step statistics in one pass over its rows, pruned exactly.

The posterior of row i is ``exp(a_ik - top_i) / s_i`` with
``a_ik = c_k - |P_k^T (x_i - m_k)|^2 / 2`` and ``c_k = ln pi_k + ln det P_k - (d/2) ln 2 pi``.
A component whose score is more than ``CUT`` = 45 below the row's best has a posterior under
e^-45 = 2.9e-20 and is left out: of the normaliser and of the statistics. That changes them by
less than M e^-45 relative, under float64's rounding (2.2e-16) for any M below 7,600: the
dense E-step's result, to its last digit. A score is bounded above in O(d) by
``c_k - lam_k |x_i - m_k|^2 / 2``, ``lam_k`` the smallest eigenvalue of the precision, and
below by the same with the largest: a row whose best component is out of every other's reach
even at its lowest score needs no exact score at all (most rows of separated clusters; its
share of the log partition comes from its component's statistics), and otherwise the exact
O(d^2) score is computed only for the components within reach of the best, the best bound
first. Without the cut, every component of every row would be scored and accumulated (20 blobs
in 10-D: 2.3 s per 500k-row chunk, against 0.05 s).

Everything a pass needs comes out of the same loop: the soft counts, sums and scatters about
the pass's shift (weighted: EM-lambda), the log partition, the conditioned posterior's mode per
row, and how many labeled rows the plain mixture labels as their own.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.families import DIAGONAL, FULL

CUT = 45.0  # a posterior under e^-45 (relative to the best) is below float64 rounding
SKIP = -2  # a row's label that leaves it out (a related row: its group's E-step places it)


def precision_bounds(prec_chol: FloatArray, family: int, d: int) -> tuple[FloatArray, FloatArray]:
    """Per component, at most the smallest and at least the largest eigenvalue of its
    precision (each moved a hair outwards, so rounding can never make a bound cross the exact
    score): they bracket the exact score between two O(d) bounds. One eigendecomposition per
    component serves both."""
    if family == FULL:
        eigen = [np.linalg.eigvalsh(p @ p.T) for p in prec_chol]
        low = np.array([e[0] for e in eigen])
        high = np.array([e[-1] for e in eigen])
    elif family == DIAGONAL:
        low, high = (prec_chol**2).min(axis=1), (prec_chol**2).max(axis=1)
    else:
        low = high = prec_chol**2
    return np.maximum(low, 0.0) * (1.0 - 1e-9), high * (1.0 + 1e-9)


def log_constants(weights: FloatArray, prec_chol: FloatArray, family: int, d: int) -> FloatArray:
    if family == FULL:
        log_det = np.log(np.diagonal(prec_chol, axis1=1, axis2=2)).sum(axis=1)
    elif family == DIAGONAL:
        log_det = np.log(prec_chol).sum(axis=1)
    else:
        log_det = d * np.log(prec_chol)
    return np.asarray(np.log(weights) + log_det - 0.5 * d * math.log(2.0 * math.pi))


# One fused kernel on purpose, not a helper per step: a row's bounds, exact scores, posterior
# and share of the statistics come out of one pass over the chunk's rows (each row read once,
# while it is in cache), with the work arrays allocated here. Helpers handed those arrays may
# see them alias, and numba then keeps the loops scalar (writing its helpers out measured
# 1.8x; docs/distributed.md, "What halved a pass").
@numba.njit(nogil=True, cache=True)
def mixture_pass(
    X: NDArray[np.floating[Any]],  # float32 or float64 rows
    labels: IntArray,
    const: FloatArray,
    means: FloatArray,
    pfull: FloatArray,
    pdiag: FloatArray,
    lam: FloatArray,
    lam_max: FloatArray,
    shift: FloatArray,
    unlabeled_weight: float,
    count: FloatArray,
    s1: FloatArray,
    s2full: FloatArray,
    s2diag: FloatArray,
    mode: IntArray,
) -> tuple[float, int]:
    """Accumulate the chunk's statistics into ``count``, ``s1`` and ``s2full`` (full family) or
    ``s2diag``; write each row's conditioned posterior mode into ``mode``; return the summed
    log partition and the labeled rows whose plain mode is their label. Rows labeled ``SKIP``
    add nothing (mode -1): leaving them out by label costs no copy of the chunk.

    A row wholly in one component (r = 1: a labeled row, or one whose best component is out of
    every other's reach) needs no exact score: it is summed, unweighted, into that component's
    ``whole`` statistics, and its part of the log partition, c_k - |P_k^T (x - m_k)|^2 / 2, is
    added per component at the end from them (the quadratic terms' sum is the trace of the
    precision times the rows' scatter about m_k). Most rows of separated clusters are told
    apart by the bounds alone: the best component's lowest possible score (``lam_max``) beats
    every other's highest (``lam``) by more than the cut.
    """
    n, d = X.shape
    m = means.shape[0]
    full = pfull.shape[1] > 0
    means_t = np.ascontiguousarray(means.T)  # the bounds' inner loop runs over components
    # Work arrays allocated here and the helpers written out in the loop: arrays handed to a
    # helper may alias, and the compiler then keeps these loops scalar (measured: 1.8x).
    bound = np.empty(m)
    norm2 = np.empty(m)
    score = np.empty(m)
    near = np.empty(m, dtype=np.int64)  # the components scored exactly, within the cut
    diff = np.empty(d)
    # Rows wholly in one component, unweighted, [0] unlabeled and [1] labeled: count, sum and
    # scatter about ``shift``.
    whole_count = np.zeros((2, m))
    whole_sum = np.zeros((2, m, d))
    whole_full = np.zeros((2, m, d, d)) if full else np.zeros((2, m, 0, 0))
    whole_diag = np.zeros((2, m, 0)) if full else np.zeros((2, m, d))
    log_z = 0.0
    agree = 0
    for i in range(n):
        label = labels[i]
        if label == SKIP:
            mode[i] = -1
            continue
        for k in range(m):
            norm2[k] = 0.0
        for s in range(d):
            xs = np.float64(X[i, s])
            for k in range(m):
                v = xs - means_t[s, k]
                norm2[k] += v * v
        for k in range(m):
            bound[k] = const[k] - 0.5 * lam[k] * norm2[k]
        first = 0
        highest = bound[0]  # kept in registers: reading bound[first] chains the loop
        runner_up = -math.inf
        for k in range(1, m):
            if bound[k] > highest:
                runner_up = highest
                highest = bound[k]
                first = k
            elif bound[k] > runner_up:
                runner_up = bound[k]
        worst_first = const[first] - 0.5 * lam_max[first] * norm2[first]
        alone = worst_first - CUT > runner_up  # no other component within reach
        best = first
        count_near = 1
        top = -math.inf
        if not alone:
            # The component of best bound first, then every other within reach of the best.
            count_near = 0
            for step in range(m + 1):
                k = first if step == 0 else step - 1
                if step > 0 and (k == first or bound[k] < top - CUT):
                    continue
                for s in range(d):
                    diff[s] = X[i, s] - means[k, s]
                q = 0.0
                if full:
                    for t in range(d):
                        y = 0.0
                        for s in range(t + 1):
                            y += diff[s] * pfull[k, s, t]
                        q += y * y
                else:
                    for s in range(d):
                        y = diff[s] * pdiag[k, s]
                        q += y * y
                a = const[k] - 0.5 * q
                score[k] = a
                near[count_near] = k
                count_near += 1
                if a > top or (a == top and k < best):
                    top = a
                    best = k
        if label >= 0:
            if best == label:
                agree += 1
            mode[i] = label
            whole, group = label, 1
        elif count_near == 1:
            mode[i] = best
            whole, group = best, 0
        else:
            mode[i] = best
            whole = -1
            total = 0.0
            for q_at in range(count_near):
                k = near[q_at]
                if score[k] >= top - CUT:
                    score[k] = math.exp(score[k] - top)
                    total += score[k]
                else:
                    score[k] = 0.0
            log_z += top + math.log(total)
            for q_at in range(count_near):
                k = near[q_at]
                r = unlabeled_weight * (score[k] / total)
                if r <= 0.0:
                    continue
                count[k] += r
                for s in range(d):
                    s1[k, s] += r * X[i, s]
                    diff[s] = X[i, s] - shift[k, s]
                if full:
                    for s in range(d):
                        v = r * diff[s]
                        for t in range(d):  # the whole square: a triangle does not vectorise
                            s2full[k, s, t] += v * diff[t]
                else:
                    for s in range(d):
                        s2diag[k, s] += r * diff[s] * diff[s]
        if whole >= 0:
            whole_count[group, whole] += 1.0
            for s in range(d):
                diff[s] = X[i, s] - shift[whole, s]
                whole_sum[group, whole, s] += diff[s]
            if full:
                for s in range(d):
                    v = diff[s]
                    for t in range(d):
                        whole_full[group, whole, s, t] += v * diff[t]
            else:
                for s in range(d):
                    whole_diag[group, whole, s] += diff[s] * diff[s]
    log_z += _add_whole(
        whole_count, whole_sum, whole_full, whole_diag, const, means, pfull, pdiag, shift,
        unlabeled_weight, count, s1, s2full, s2diag,
    )  # fmt: skip
    return log_z, agree


@numba.njit(nogil=True, cache=True)
def _add_whole(
    whole_count: FloatArray,
    whole_sum: FloatArray,
    whole_full: FloatArray,
    whole_diag: FloatArray,
    const: FloatArray,
    means: FloatArray,
    pfull: FloatArray,
    pdiag: FloatArray,
    shift: FloatArray,
    unlabeled_weight: float,
    count: FloatArray,
    s1: FloatArray,
    s2full: FloatArray,
    s2diag: FloatArray,
) -> float:
    """The rows wholly in one component into the statistics (unlabeled ones weighted) and
    their part of the log partition: per component, n c_k - tr(Lambda_k M_k) / 2, M_k their
    scatter about m_k (from the one about the shift), Lambda_k = P_k P_k^T."""
    m, d = means.shape
    full = pfull.shape[1] > 0
    delta = np.empty(d)
    log_z = 0.0
    for group in range(2):
        w = unlabeled_weight if group == 0 else 1.0
        for k in range(m):
            rows = whole_count[group, k]
            if rows == 0.0:
                continue
            count[k] += w * rows
            for s in range(d):
                s1[k, s] += w * (whole_sum[group, k, s] + rows * shift[k, s])
                delta[s] = shift[k, s] - means[k, s]
            quadratic = 0.0
            if full:
                for s in range(d):
                    for t in range(d):
                        s2full[k, s, t] += w * whole_full[group, k, s, t]
                for s in range(d):
                    for t in range(d):
                        about_mean = (
                            whole_full[group, k, s, t]
                            + whole_sum[group, k, s] * delta[t]
                            + delta[s] * whole_sum[group, k, t]
                            + rows * delta[s] * delta[t]
                        )
                        precision = 0.0
                        for u in range(max(s, t), d):
                            precision += pfull[k, s, u] * pfull[k, t, u]
                        quadratic += precision * about_mean
            else:
                for s in range(d):
                    s2diag[k, s] += w * whole_diag[group, k, s]
                    about_mean = (
                        whole_diag[group, k, s]
                        + 2.0 * whole_sum[group, k, s] * delta[s]
                        + rows * delta[s] * delta[s]
                    )
                    quadratic += pdiag[k, s] * pdiag[k, s] * about_mean
            log_z += rows * const[k] - 0.5 * quadratic
    return log_z
