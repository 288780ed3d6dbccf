"""MAP refinement of the labels of large components: iterated conditional modes (Besag 1986).

Mean field and Gibbs give marginals; their argmax (or the best sampled state) is a labelling
that a single-node change can often still improve under the joint log-score

    S(z) = sum_i a_{i z_i} + sum_{edges} J_ij [z_i = z_j]      (hard do-not-links: z_i != z_j)

ICM sets each node to its best label given its neighbours until no node changes. Every change
raises S, so it stops; nodes are visited colour by colour (``graph.colour_classes``), the same
schedule as the mean field. A node's current
label is never excluded by a hard do-not-link when the start satisfies them, so ICM keeps them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from app.engine.arrays import BoolArray, FloatArray, IntArray


@numba.njit(nogil=True, cache=True)
def _best_label(
    a: FloatArray,
    i: int,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    nbr_hard: BoolArray,
    z: IntArray,
    score: FloatArray,
) -> int:
    m = a.shape[1]
    for k in range(m):
        score[k] = a[i, k]
    for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
        zj = z[nbr_idx[e]]
        if nbr_hard[e]:
            score[zj] = -math.inf
        else:
            score[zj] += nbr_J[e]
    best = z[i]
    for k in range(m):
        if score[k] > score[best]:
            best = k
    return best


@numba.njit(nogil=True, cache=True)
def icm(
    a: FloatArray,
    nodes: IntArray,
    colours: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    nbr_hard: BoolArray,
    z: IntArray,
    max_sweeps: int,
) -> int:
    """Improve ``z`` on ``nodes`` in place; returns the number of sweeps that changed a label."""
    score = np.empty((nodes.shape[0], a.shape[1]))
    changed = np.zeros(nodes.shape[0], dtype=np.bool_)
    sweeps = 0
    while sweeps < max_sweeps:
        for c in range(colours.shape[0] - 1):
            lo = colours[c]
            for q in range(colours[c + 1] - lo):
                p = lo + q
                i = nodes[p]
                best = _best_label(a, i, nbr_ptr, nbr_idx, nbr_J, nbr_hard, z, score[p])
                changed[p] = best != z[i]
                z[i] = best
        if not changed.any():
            break
        sweeps += 1
    return sweeps
