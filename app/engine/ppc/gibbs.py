"""Gibbs-sampling E-step (specs/ppc.md Sec. 3.4, eq. 3.1) with Rao-Blackwellised marginals.

The conditional of one super-node given the rest is ``a_ik + sum_j J_ij [z_j = k]`` with the
labels of its hard do-not-link neighbours excluded (probability exactly 0). Sweeps are
systematic scans; one sweep is one numba call that gets its uniforms from the caller's
generator, so results are reproducible from ``random_state``. After burn-in, the conditional
probabilities (not the sampled indicators) are averaged: lower variance, same expectation.
The chain starts from a labelling that satisfies every hard do-not-link (found by backtracking
search), and every move keeps it so (the current label is never excluded).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from app.engine.arrays import BoolArray, FloatArray, IntArray


@numba.njit(nogil=True, cache=True)
def feasible_labels(
    a: FloatArray,
    order: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_hard: BoolArray,
    z: IntArray,
    budget: int,
) -> int:
    """Backtracking search for labels of ``order`` that satisfy every hard do-not-link.

    Nodes are labelled in the given order (BFS over the hard do-not-link graph keeps conflicts
    local), each trying its labels from the highest score down. Returns -1 on success, -2 when
    no labelling exists, -3 when ``budget`` backtracking steps were not enough.
    """
    t = order.shape[0]
    m = a.shape[1]
    rank = np.empty((t, m), dtype=np.int64)
    for pos in range(t):
        rank[pos] = np.argsort(-a[order[pos]])
        z[order[pos]] = -1
    tried = np.zeros(t, dtype=np.int64)
    pos = 0
    steps = 0
    while 0 <= pos < t:
        i = order[pos]
        z[i] = -1
        placed = False
        while tried[pos] < m:
            k = rank[pos, tried[pos]]
            tried[pos] += 1
            if a[i, k] == -math.inf:
                continue  # a label the node is clamped away from
            clash = False
            for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
                if nbr_hard[e] and z[nbr_idx[e]] == k:
                    clash = True
                    break
            if not clash:
                z[i] = k
                placed = True
                break
        if placed:
            pos += 1
            if pos < t:
                tried[pos] = 0
        else:
            pos -= 1
            steps += 1
            if steps > budget:
                return -3
    return -1 if pos == t else -2


@numba.njit(nogil=True, cache=True)
def gibbs_sweep(
    a: FloatArray,
    nodes: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    nbr_hard: BoolArray,
    z: IntArray,
    uniforms: FloatArray,
    acc: FloatArray,
    accumulate: bool,
    scale: float = 1.0,
) -> float:
    """One systematic-scan sweep; adds the conditionals to ``acc`` if ``accumulate``.

    Soft couplings are multiplied by ``scale`` (annealing). Returns the log-score
    sum_i a_{i z_i} + s sum_{edges} J [z_i = z_j] of the final state.
    """
    m = a.shape[1]
    logit = np.empty(m)
    for pos in range(nodes.shape[0]):
        i = nodes[pos]
        for k in range(m):
            logit[k] = a[i, k]
        for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
            zj = z[nbr_idx[e]]
            if nbr_hard[e]:
                logit[zj] = -math.inf
            elif logit[zj] > -math.inf:
                logit[zj] += scale * nbr_J[e]
        top = -math.inf
        for k in range(m):
            top = max(top, logit[k])
        total = 0.0
        for k in range(m):
            logit[k] = math.exp(logit[k] - top)
            total += logit[k]
        target = uniforms[pos] * total
        running = 0.0
        choice = -1
        for k in range(m):
            if logit[k] > 0.0:
                choice = k
                running += logit[k]
                if running > target:
                    break
        z[i] = choice
        if accumulate:
            for k in range(m):
                acc[i, k] += logit[k] / total
    score = 0.0
    for pos in range(nodes.shape[0]):
        i = nodes[pos]
        score += a[i, z[i]]
        for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
            if z[nbr_idx[e]] == z[i]:
                score += 0.5 * scale * nbr_J[e]
    return score
