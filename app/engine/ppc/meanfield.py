"""Mean-field E-step for large PPC components (specs/ppc.md Sec. 3.5, corrected factor 2).

Fully factorised Q(Z) = prod_i Q_i(z_i), updated node by node (coordinate ascent, Gauss-Seidel)::

    Q_i  <-  (1 - eta) Q_i + eta softmax_k( a_ik + sum_j J_ij Q_jk ),   J = 2W

with damping ``eta`` in (0, 1]. The ELBO restricted to Q_i is concave and the undamped update is
its maximiser, so a damped step also never lowers the ELBO: the bound increases monotonically.
Convergence is checked on the fixed-point residual max |softmax(...) - Q_i|, not on the damped
step, so the tolerance means the same for every ``eta``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@numba.njit(nogil=True, cache=True)
def mean_field_sweeps(
    a: FloatArray,
    nodes: IntArray,
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    Q: FloatArray,
    damping: float,
    tol: float,
    max_sweeps: int,
) -> tuple[int, float]:
    """Sequential damped sweeps over ``nodes`` until the residual < tol; (sweeps, residual)."""
    m = a.shape[1]
    field = np.empty(m)
    residual = math.inf
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        residual = 0.0
        for i in nodes:
            for k in range(m):
                field[k] = a[i, k]
            for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
                j = nbr_idx[e]
                coupling = nbr_J[e]
                for k in range(m):
                    field[k] += coupling * Q[j, k]
            top = -math.inf
            for k in range(m):
                top = max(top, field[k])
            total = 0.0
            for k in range(m):
                field[k] = math.exp(field[k] - top)
                total += field[k]
            for k in range(m):
                target = field[k] / total
                residual = max(residual, abs(target - Q[i, k]))
                Q[i, k] += damping * (target - Q[i, k])
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
) -> float:
    """F(Q) = sum_i sum_k Q_ik (a_ik - log Q_ik) + sum_{edges} J sum_k Q_ik Q_jk  <=  log Z."""
    m = a.shape[1]
    total = 0.0
    for i in nodes:
        for k in range(m):
            q = Q[i, k]
            if q > 0.0:
                total += q * (a[i, k] - math.log(q))
            pair = 0.0
            for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
                pair += nbr_J[e] * Q[nbr_idx[e], k]
            total += 0.5 * q * pair  # every edge is seen from both ends
    return total
