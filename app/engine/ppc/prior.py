"""The pairwise prior's normaliser Omega(pi) and the pi M-step (specs/ppc.md Sec. 3.7).

Omega factorises over components, and a component's Omega_T(pi) is the partition function of
the same graph with node log-scores ``|T_i| log pi`` (chunklet sizes), so the exact E-step
engines compute it, once per distinct component shape. With logits ``eta`` (pi = softmax(eta))
the pi objective of eq. 2.13 is

    G(eta) = sum_k n_k eta_k - sum_T log Z_T(size * eta)      (unit singletons: log Z = lse)

which is concave (a log-partition function is convex), with gradient
``n_k - sum_i size_i P_prior(z_i = k)``. ``optimize`` maximises it with Newton's method from
the previous pi; ``grid`` is the paper's search on the simplex at resolution 0.01 (nodes with
a zero entry excluded); ``fixed`` keeps pi.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from app.engine.arrays import FloatArray
from app.engine.ppc.exact import solve_exact
from app.engine.ppc.graph import OmegaModel

PI_UPDATES = ("auto", "optimize", "grid", "fixed")
PI_FLOOR = 1e-12
GRID_RESOLUTION = 100  # nodes pi = c / 100
MAX_GRID_COMPONENTS = 4  # C(99, 3) = 156,849 nodes; M = 5 would need 3.6 million


def log_partition(omega: OmegaModel, eta: FloatArray) -> tuple[float, FloatArray]:
    """sum_T log Z_T(size * eta) over the non-unit components and its gradient in eta."""
    m = eta.shape[0]
    if omega.trivial:
        return 0.0, np.zeros(m)
    a = omega.size[:, np.newaxis] * eta[np.newaxis, :]
    marg = np.empty_like(a)
    decode = np.empty(a.shape[0], dtype=np.int64)
    tree_logz, enum_logz = solve_exact(omega.shapes, a, marg, decode)
    total = float(omega.tree_count @ tree_logz + omega.enum_count @ enum_logz)
    grad = (omega.node_count * omega.size) @ marg
    return total, grad


def log_omega(omega: OmegaModel, pi: FloatArray) -> float:
    """log Omega(pi) over the components where it is exact (unit singletons give 0)."""
    if omega.trivial:
        return 0.0
    with np.errstate(divide="ignore"):
        return log_partition(omega, np.log(pi))[0]


def _objective(
    eta: FloatArray, nk: FloatArray, n_unit: float, omega: OmegaModel
) -> tuple[float, FloatArray]:
    """G(eta) and its gradient."""
    part, grad = log_partition(omega, eta)
    top = float(eta.max())
    soft = np.exp(eta - top)
    total = float(soft.sum())
    lse = top + math.log(total)
    soft /= total
    return float(nk @ eta) - n_unit * lse - part, nk - n_unit * soft - grad


def optimize_pi(nk: FloatArray, omega: OmegaModel, start: FloatArray) -> FloatArray:
    """argmax over the simplex of sum_k n_k log pi_k - log Omega(pi) (global: concave in eta).

    Newton's method on the logits with eta_0 = 0 fixed (G is invariant to eta + c), a
    finite-difference Hessian (M - 1 extra gradients, each one exact pass over the component
    shapes) and a backtracking line search; stops when the gradient is below 1e-9 N.
    """
    n_total = float(nk.sum())
    if omega.trivial:
        return nk / n_total
    n_unit = n_total - float(omega.node_count @ omega.size)
    eta = np.log(np.maximum(start, PI_FLOOR))
    eta -= eta[0]
    value, grad = _objective(eta, nk, n_unit, omega)
    m = eta.shape[0]
    for _ in range(100):
        g = grad[1:]
        if np.abs(g).max() < 1e-9 * n_total:
            break
        hess = np.empty((m - 1, m - 1))
        for q in range(1, m):
            h = 1e-5 * max(1.0, abs(eta[q]))
            shifted = eta.copy()
            shifted[q] += h
            hess[q - 1] = (_objective(shifted, nk, n_unit, omega)[1][1:] - g) / h
        hess = 0.5 * (hess + hess.T)
        try:
            step = -np.linalg.solve(hess, g)
            if not (step @ g > 0.0):
                step = g / n_total
        except np.linalg.LinAlgError:
            step = g / n_total
        t = 1.0
        while t > 1e-12:
            trial = eta.copy()
            trial[1:] += t * step
            trial_value, trial_grad = _objective(trial, nk, n_unit, omega)
            if trial_value >= value + 1e-4 * t * float(step @ g):
                break
            t *= 0.5
        if t <= 1e-12 or trial_value - value <= 1e-15 * max(1.0, abs(value)):
            if trial_value > value:
                eta, value, grad = trial, trial_value, trial_grad
            break
        eta, value, grad = trial, trial_value, trial_grad
    eta = eta - eta.max()
    pi = np.maximum(np.exp(eta) / np.exp(eta).sum(), PI_FLOOR)
    return np.asarray(pi / pi.sum())


def simplex_grid(m: int) -> FloatArray:
    """All pi with entries c / 100, c >= 1 integer, summing to 1."""
    if m > MAX_GRID_COMPONENTS:
        raise ValueError(
            f"pi_update='grid' is limited to n_components <= {MAX_GRID_COMPONENTS} (the grid "
            f"grows as C(99, M - 1)); use pi_update='optimize'"
        )
    r = GRID_RESOLUTION
    rows = [
        (*cuts, r - sum(cuts))
        for cuts in itertools.product(range(1, r), repeat=m - 1)
        if sum(cuts) <= r - 1
    ]
    return np.asarray(rows, dtype=np.float64).reshape(-1, m) / r


def grid_log_omega(omega: OmegaModel, grid: FloatArray) -> FloatArray:
    """log Omega at every grid node; computed once per fit (Omega depends on pi and W only)."""
    return np.array([log_omega(omega, node) for node in grid])


def grid_pi(nk: FloatArray, grid: FloatArray, grid_omega: FloatArray) -> FloatArray:
    """The paper's eq. 2.14: the best grid node."""
    scores = np.log(grid) @ nk - grid_omega
    return np.asarray(grid[int(np.argmax(scores))].copy())


def pi_objective(nk: FloatArray, omega: OmegaModel, pi: FloatArray) -> float:
    """sum_k n_k log pi_k - log Omega(pi) (for tests and reports)."""
    with np.errstate(divide="ignore"):
        return float(nk @ np.log(pi)) - log_omega(omega, pi)
