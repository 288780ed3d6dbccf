"""Mean-field E-step for large PPC components (specs/ppc.md Sec. 3.5, corrected factor 2).

Fully factorised Q(Z) = prod_i Q_i(z_i), updated by coordinate ascent::

    Q_i  <-  (1 - eta) Q_i + eta softmax_k( a_ik + s sum_j J_ij Q_jk ),   J = 2W

with damping ``eta`` in (0, 1] and a coupling scale ``s`` in [0, 1] (1 is the model; smaller
values are the annealing steps of ``fit.run_em``). The nodes are visited colour by colour
(``graph.colour_classes``; the checkerboard on a 4-neighbour grid): nodes of one colour share
no edge, so the order within a colour does not matter (a parallel loop per colour was measured
and dropped: on the shared 2-core machine the second thread mostly waited for a busy core).
The ELBO restricted to Q_i is concave and the undamped update is
its maximiser, so every step, damped or not, never lowers the ELBO. Convergence is checked on
the fixed-point residual max |softmax(...) - Q_i|, not on the damped step, so the tolerance
means the same for every ``eta``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from app.engine.arrays import FloatArray, IntArray


@numba.njit(nogil=True, cache=True)
def _update(
    a: FloatArray,
    i: int,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    Q: FloatArray,
    damping: float,
    scale: float,
    field: FloatArray,
) -> float:
    """One damped coordinate step of node i; returns its fixed-point residual."""
    m = a.shape[1]
    for k in range(m):
        field[k] = a[i, k]
    for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
        j = nbr_idx[e]
        coupling = scale * nbr_J[e]
        for k in range(m):
            field[k] += coupling * Q[j, k]
    top = -math.inf
    for k in range(m):
        top = max(top, field[k])
    total = 0.0
    for k in range(m):
        field[k] = math.exp(field[k] - top)
        total += field[k]
    residual = 0.0
    for k in range(m):
        target = field[k] / total
        residual = max(residual, abs(target - Q[i, k]))
        Q[i, k] += damping * (target - Q[i, k])
    return residual


@numba.njit(nogil=True, cache=True)
def mean_field_sweeps(
    a: FloatArray,
    nodes: IntArray,
    colours: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    Q: FloatArray,
    damping: float,
    tol: float,
    max_sweeps: int,
    scale: float = 1.0,
) -> tuple[int, float]:
    """Sweeps over ``nodes`` (grouped by colour, ``colours`` the offsets) until no node's
    residual reaches ``tol``; returns (sweeps, largest residual of the last sweep).

    The first sweep visits every node; later ones only nodes with a neighbour that moved by
    ``tol`` or more since their last visit (a node whose neighbours stayed put is still at its
    fixed point). On image grids under strong coupling most nodes settle after a few sweeps
    and only those near region boundaries keep moving.
    """
    dirty = np.zeros(Q.shape[0], dtype=np.bool_)
    for p in range(nodes.shape[0]):
        dirty[nodes[p]] = True
    field = np.empty(a.shape[1])
    residual = math.inf
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        residual = 0.0
        for c in range(colours.shape[0] - 1):
            for p in range(colours[c], colours[c + 1]):
                i = nodes[p]
                if not dirty[i]:
                    continue
                dirty[i] = False
                change = _update(a, i, nbr_ptr, nbr_idx, nbr_J, Q, damping, scale, field)
                residual = max(residual, change)
                if change >= tol:
                    for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
                        dirty[nbr_idx[e]] = True
                    if damping < 1.0:
                        dirty[i] = True  # a damped step leaves the node short of its target
        if residual < tol:
            break
    return sweeps, residual


@numba.njit(nogil=True, cache=True)
def mean_field_bound(
    a: FloatArray,
    nodes: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    Q: FloatArray,
    scale: float = 1.0,
) -> float:
    """F(Q) = sum_i sum_k Q_ik (a_ik - log Q_ik) + s sum_{edges} J sum_k Q_ik Q_jk <= log Z."""
    m = a.shape[1]
    total = 0.0
    for p in range(nodes.shape[0]):
        i = nodes[p]
        node = 0.0
        for k in range(m):
            q = Q[i, k]
            if q > 0.0:
                node += q * (a[i, k] - math.log(q))
            pair = 0.0
            for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
                pair += nbr_J[e] * Q[nbr_idx[e], k]
            node += 0.5 * scale * q * pair  # every edge is seen from both ends
        total += node
    return total
