"""Gaussian families of CEC: the per-cluster cross-entropy cost H(N(m, S)) of each family.

For a cluster with MLE covariance S in R^d (spec cec-ib.md Sec. 2.1 and 2.7):

* ``full``:      (d/2) ln(2 pi e) + (1/2) ln det S
* ``diagonal``:  (d/2) ln(2 pi e) + (1/2) sum_t ln S_tt
* ``spherical``: (d/2) ln(2 pi e) + (d/2) ln(tr S / d)
* ``unit`` (kernel-only): the cross-entropy with N(m, I), (d/2) ln(2 pi) + (1/2) tr S. It is
  the CEC paper's fixed-covariance family G_Sigma with Sigma = I; C4S's ``tied_spherical`` runs it
  on data scaled by 1/sigma, which is a spherical family whose variance all clusters share
  (app/engine/c4s/tied_spherical.py).

A singular covariance costs +inf (never for ``unit``). After adding or removing one weighted
point the family cost changes through one scalar factor per family (matrix determinant lemma,
``log_factor``), which is what makes a Hartigan move evaluation O(d^2) for ``full`` and O(d) for
the others.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from app.engine.arrays import FloatArray
from app.engine.core.linalg import (
    SCALE_RTOL,
    cholesky_lower,
    half_logdet,
    invert_lower,
    largest_diagonal,
    mahalanobis_sq,
)

FULL = 0
DIAGONAL = 1
SPHERICAL = 2
UNIT = 3  # kernel-only: not a user's choice, see the module docstring
FAMILIES: dict[str, int] = {"full": FULL, "diagonal": DIAGONAL, "spherical": SPHERICAL}
KERNEL_FAMILIES: dict[str, int] = {**FAMILIES, "unit": UNIT}
# the density ``predict`` applies for a fitted ``covariance_`` (C4S's tied_spherical fits
# spherical Gaussians that happen to share their variance)
DENSITY_FAMILIES: dict[str, int] = {**FAMILIES, "tied_spherical": SPHERICAL}

HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)

# A rank-one downdate that keeps less than this fraction of the variance along the removed
# direction leaves a covariance that is singular to working precision.
DOWNDATE_RTOL = 1e-10


def min_cluster_points(family: int, d: int) -> int:
    """Smallest cluster that can lose one point and stay non-singular.

    ``full`` needs d + 1 points for a non-singular covariance, so d + 2 (the authors' rule, spec
    Sec. 7.2); ``diagonal`` and ``spherical`` need 2, so 3; ``unit`` costs finite with 1, so 2.
    """
    if family == UNIT:
        return 2
    return d + 2 if family == FULL else 3


@numba.njit(nogil=True, cache=True)
def nonsingular_points(family: int, d: int) -> float:
    """Fewest points whose covariance in the family can be non-singular."""
    if family == UNIT:
        return 1.0
    return float(d + 1) if family == FULL else 2.0


@numba.njit(nogil=True, cache=True)
def family_entropy(family: int, cov: FloatArray, chol: FloatArray, chol_inv: FloatArray) -> float:
    """H(N(m, S)) of the family from scratch; +inf if singular.

    For ``full`` it also fills ``chol`` = L (S = L L^T) and ``chol_inv`` = L^{-1}.
    """
    d = cov.shape[0]
    if family == FULL:
        if not cholesky_lower(cov, chol):
            return math.inf
        invert_lower(chol, chol_inv)
        return d * HALF_LOG_2PIE + half_logdet(chol)
    if family == DIAGONAL:
        total = 0.0
        floor = SCALE_RTOL * largest_diagonal(cov)  # zero up to rounding (linalg.py)
        for t in range(d):
            if not (cov[t, t] > 0.0) or not (cov[t, t] > floor):
                return math.inf
            total += math.log(cov[t, t])
        return d * HALF_LOG_2PIE + 0.5 * total
    trace = 0.0
    if family == UNIT:
        for t in range(d):
            trace += cov[t, t]
        return 0.5 * d * math.log(2.0 * math.pi) + 0.5 * trace
    for t in range(d):
        trace += cov[t, t]
    if not (trace > 0.0):
        return math.inf
    return d * HALF_LOG_2PIE + 0.5 * d * math.log(trace / d)


@numba.njit(nogil=True, cache=True)
def log_factor(
    family: int,
    u: FloatArray,
    cov: FloatArray,
    chol_inv: FloatArray,
    c: int,
    coef: float,
    sign: float,
) -> float:
    """The point-dependent part of the family cost change of cluster ``c`` for one point.

    With ``u = x - m``, new weight W', ``rho = W/W'`` and ``coef = w/W'``, the covariance
    becomes ``rho (S + sign coef u u^T)`` and the family cost ``H + (d ln rho + F) / 2`` with

    * ``full``:      F = ln(1 + sign coef u^T S^{-1} u)          (matrix determinant lemma)
    * ``diagonal``:  F = sum_t ln(1 + sign coef u_t^2 / S_tt)
    * ``spherical``: F = d ln(1 + sign coef |u|^2 / tr S)
    * ``unit``:      F = rho (tr S + sign coef |u|^2) - tr S - d ln rho, with rho = 1 - sign coef
      (the cost is linear in tr S, so F carries the point-independent part too)

    ``cov`` and ``chol_inv`` are the (k, d, d) stacks; ``chol_inv`` (L^{-1}) is used for
    ``full`` only. Returns +inf when a downdate leaves a singular covariance.
    """
    d = u.shape[0]
    if family == FULL:
        factor = 1.0 + sign * coef * mahalanobis_sq(chol_inv, c, u)
        return math.log(factor) if factor > DOWNDATE_RTOL else math.inf
    if family == DIAGONAL:
        total = 0.0
        for t in range(d):
            factor = 1.0 + sign * coef * u[t] * u[t] / cov[c, t, t]
            if not (factor > DOWNDATE_RTOL):
                return math.inf
            total += math.log(factor)
        return total
    trace = 0.0
    norm2 = 0.0
    for t in range(d):
        trace += cov[c, t, t]
        norm2 += u[t] * u[t]
    if family == UNIT:
        rho = 1.0 - sign * coef
        return rho * (trace + sign * coef * norm2) - trace - d * math.log(rho)
    factor = 1.0 + sign * coef * norm2 / trace
    return d * math.log(factor) if factor > DOWNDATE_RTOL else math.inf


@numba.njit(nogil=True, cache=True)
def join_log_factor_bound(
    family: int, u: FloatArray, cov: FloatArray, c: int, spread: float, coef: float
) -> float:
    """A lower bound of ``log_factor(sign=+1)`` for cluster ``c`` in O(d) without logarithms.

    Uses ln(1 + t) >= t / (1 + t) and, for ``full``, u^T S^{-1} u >= |u|^2 / spread with
    ``spread >= lambda_max(S)``; for ``diagonal`` also prod(1 + a_t) >= 1 + sum a_t. For
    ``unit`` the exact factor costs O(d) already and is returned.
    """
    d = u.shape[0]
    # A degenerate cluster (zero spread or variance, kept alive when C4S cannot dissolve it)
    # gets the trivial bound 0, so the exact factor decides; dividing would raise under numba.
    if family == FULL:
        if not spread > 0.0:
            return 0.0
        norm2 = 0.0
        for t in range(d):
            norm2 += u[t] * u[t]
        q = coef * norm2 / spread
        return q / (1.0 + q)
    if family == DIAGONAL:
        q = 0.0
        for t in range(d):
            if not cov[c, t, t] > 0.0:
                return 0.0
            q += u[t] * u[t] / cov[c, t, t]
        q *= coef
        return q / (1.0 + q)
    if family == UNIT:
        return log_factor(family, u, cov, cov, c, coef, 1.0)
    trace = 0.0
    norm2 = 0.0
    for t in range(d):
        trace += cov[c, t, t]
        norm2 += u[t] * u[t]
    if not trace > 0.0:
        return 0.0
    q = coef * norm2 / trace
    return d * q / (1.0 + q)


@numba.njit(nogil=True, cache=True)
def spread_bound(cov: FloatArray) -> float:
    """An upper bound of the largest eigenvalue: the Frobenius norm of ``cov``."""
    total = 0.0
    d = cov.shape[0]
    for s in range(d):
        for t in range(d):
            total += cov[s, t] * cov[s, t]
    return math.sqrt(total)


def family_covariances(family: int, cov: FloatArray) -> FloatArray:
    """The optimal covariance parameters of the family, in scikit-learn's GaussianMixture shapes.

    ``full``: (k, d, d); ``diagonal``: (k, d) variances; ``spherical``: (k,) with S = v I and
    v = tr(S_Y) / d (the minimiser of the cross-entropy over spherical Gaussians); ``unit``: (k,)
    ones.
    """
    if family == UNIT:
        return np.ones(cov.shape[0])
    if family == FULL:
        return cov.copy()
    diag = np.diagonal(cov, axis1=1, axis2=2).copy()
    if family == DIAGONAL:
        return diag
    return np.asarray(diag.mean(axis=1))
