"""Per-cluster sufficient statistics of CEC / CEC-IB and the per-cluster energy of eq. (11).

For a cluster Y with weight s (inside a set of total weight n), Gaussian family cost H_Y and label
counts c_j over the labeled members (L = sum_j c_j, T = sum_j c_j ln c_j):

    h(Y) = ln L - T / L  if L > 0, else 0         (= H(Z | Y cap X_l); spec decision 7.6)
    E(Y) = (s/n) * (-ln(s/n) + H_Y + beta * h(Y))

and the total energy is the sum over live clusters (spec cec-ib.md Sec. 2.3-2.4). Plain CEC is
beta = 0 (or no labels). The state is a NamedTuple of arrays so numba kernels can share it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.core.families import family_entropy, spread_bound
from app.engine.core.moments import moments_from_labels


class ClusterState(NamedTuple):
    """Statistics of k cluster slots; dead slots have ``alive == False`` and zero energy."""

    size: FloatArray  # (k,) member count
    mean: FloatArray  # (k, d)
    cov: FloatArray  # (k, d, d) MLE covariance
    chol: FloatArray  # (k, d, d) lower Cholesky factor L of cov (family "full" only)
    chol_inv: FloatArray  # (k, d, d) its inverse L^{-1} (family "full" only)
    entropy: FloatArray  # (k,) family cost H(N(m, S)); +inf if singular
    alive: BoolArray  # (k,)
    label_counts: IntArray  # (k, m) labeled members per category
    labeled: IntArray  # (k,) L = number of labeled members
    label_xlogx: FloatArray  # (k,) T = sum_j c_j ln c_j
    energy: FloatArray  # (k,) E(Y) of eq. (11)
    # Point-independent parts of a move's energy change, refreshed with ``energy``:
    label_h: FloatArray  # (k,) h(Y)
    join_const: FloatArray  # (k,) E(Y + x) - E(Y) without the point's family and label terms
    leave_const: FloatArray  # (k,) E(Y - x) - E(Y) likewise
    spread: FloatArray  # (k,) Frobenius norm of cov, an upper bound of its largest eigenvalue


def new_state(k: int, d: int, n_categories: int) -> ClusterState:
    """Zeroed statistics for k slots, all alive."""
    return ClusterState(
        size=np.zeros(k),
        mean=np.zeros((k, d)),
        cov=np.zeros((k, d, d)),
        chol=np.zeros((k, d, d)),
        chol_inv=np.zeros((k, d, d)),
        entropy=np.zeros(k),
        alive=np.ones(k, dtype=np.bool_),
        label_counts=np.zeros((k, n_categories), dtype=np.int64),
        labeled=np.zeros(k, dtype=np.int64),
        label_xlogx=np.zeros(k),
        energy=np.zeros(k),
        label_h=np.zeros(k),
        join_const=np.zeros(k),
        leave_const=np.zeros(k),
        spread=np.zeros(k),
    )


@numba.njit(nogil=True, cache=True)
def xlogx(c: float) -> float:
    """c ln c with 0 ln 0 = 0."""
    return c * math.log(c) if c > 0.0 else 0.0


@numba.njit(nogil=True, cache=True)
def label_entropy(labeled: float, label_xlogx: float) -> float:
    """h(Y) = ln L - T/L, and 0 for a cluster without labeled points."""
    if labeled <= 0.0:
        return 0.0
    return max(math.log(labeled) - label_xlogx / labeled, 0.0)


@numba.njit(nogil=True, cache=True)
def cluster_energy(size: float, n_total: float, entropy: float, h: float, beta: float) -> float:
    """E(Y) of eq. (11); an empty cluster costs 0, a singular one +inf."""
    if size <= 0.0:
        return 0.0
    p = size / n_total
    return p * (-math.log(p) + entropy + beta * h)


@numba.njit(nogil=True, cache=True)
def label_entropy_after(state: ClusterState, c: int, category: int, sign: int) -> float:
    """h of cluster ``c`` after adding (sign=+1) or removing (sign=-1) one point of ``category``.

    O(1): only one count changes. Unlabeled points (category < 0) leave h unchanged.
    """
    if category < 0:
        return label_entropy(float(state.labeled[c]), state.label_xlogx[c])
    old = float(state.label_counts[c, category])
    new_t = state.label_xlogx[c] - xlogx(old) + xlogx(old + sign)
    return label_entropy(float(state.labeled[c] + sign), new_t)


@numba.njit(nogil=True, cache=True)
def update_labels(state: ClusterState, c: int, category: int, sign: int) -> None:
    """Apply a one-point change of the label statistics of cluster ``c`` in O(1)."""
    if category < 0:
        return
    old = float(state.label_counts[c, category])
    state.label_xlogx[c] += xlogx(old + sign) - xlogx(old)
    state.label_counts[c, category] += sign
    state.labeled[c] += sign


@numba.njit(nogil=True, cache=True)
def refresh_energy(state: ClusterState, c: int, n_total: float, beta: float) -> None:
    """Recompute ``energy[c]`` and the move constants from size, family cost and labels.

    With p = s/n the family cost after a one-point change is H + (d ln(s/s') + F) / 2 (see
    ``gaussian_families.log_factor``), so E(Y +- x) - E(Y) = const + p' (F / 2 + beta h').
    """
    size = state.size[c]
    ent = state.entropy[c]
    if not state.alive[c] or size <= 0.0 or not math.isfinite(ent):
        # dead, empty or singular: no move in or out is evaluated
        state.energy[c] = 0.0 if not state.alive[c] or size <= 0.0 else math.inf
        state.join_const[c] = math.inf
        state.leave_const[c] = math.inf
        return
    half_d = 0.5 * state.mean.shape[1]
    h = label_entropy(float(state.labeled[c]), state.label_xlogx[c])
    state.label_h[c] = h
    energy = cluster_energy(size, n_total, ent, h, beta)
    state.energy[c] = energy
    p_join = (size + 1.0) / n_total
    state.join_const[c] = (
        p_join * (-math.log(p_join) + ent + half_d * math.log(size / (size + 1.0))) - energy
    )
    if size <= 1.0:
        state.leave_const[c] = -energy
    else:
        p_leave = (size - 1.0) / n_total
        state.leave_const[c] = (
            p_leave * (-math.log(p_leave) + ent + half_d * math.log(size / (size - 1.0))) - energy
        )
    state.spread[c] = spread_bound(state.cov[c])


@numba.njit(nogil=True, cache=True)
def recompute_state(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
) -> None:
    """All statistics of the live clusters from scratch (removes incremental drift)."""
    moments_from_labels(X, assign, state.size, state.mean, state.cov)
    state.label_counts[:] = 0
    state.labeled[:] = 0
    for i in range(assign.shape[0]):
        z = categories[i]
        if z >= 0:
            state.label_counts[assign[i], z] += 1
            state.labeled[assign[i]] += 1
    for c in range(state.size.shape[0]):
        t = 0.0
        for j in range(state.label_counts.shape[1]):
            t += xlogx(float(state.label_counts[c, j]))
        state.label_xlogx[c] = t
        if state.alive[c] and state.size[c] > 0.0:
            state.entropy[c] = family_entropy(
                family, state.cov[c], state.chol[c], state.chol_inv[c]
            )
        else:
            state.entropy[c] = 0.0
        refresh_energy(state, c, n_total, beta)


@numba.njit(nogil=True, cache=True)
def _copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for arrays of one shape, element by element: numba's slice copy
    compiles a shape-mismatch error path (string formatting) per dimension count, 5 s of a
    cold C4s start."""
    for i in range(src.size):
        dst.flat[i] = src.flat[i]


@numba.njit(nogil=True, cache=True)
def copy_state(src: ClusterState, dst: ClusterState) -> None:
    """Copy every statistic of ``src`` into ``dst`` (same shapes): a snapshot to roll back to."""
    _copy_into(dst.size, src.size)
    _copy_into(dst.mean, src.mean)
    _copy_into(dst.cov, src.cov)
    _copy_into(dst.chol, src.chol)
    _copy_into(dst.chol_inv, src.chol_inv)
    _copy_into(dst.entropy, src.entropy)
    _copy_into(dst.alive, src.alive)
    _copy_into(dst.label_counts, src.label_counts)
    _copy_into(dst.labeled, src.labeled)
    _copy_into(dst.label_xlogx, src.label_xlogx)
    _copy_into(dst.energy, src.energy)
    _copy_into(dst.label_h, src.label_h)
    _copy_into(dst.join_const, src.join_const)
    _copy_into(dst.leave_const, src.leave_const)
    _copy_into(dst.spread, src.spread)


def total_energy(state: ClusterState) -> float:
    """Sum of E(Y) over live clusters."""
    return float(state.energy[state.alive].sum())
