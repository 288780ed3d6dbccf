"""Small dense linear-algebra kernels on lower Cholesky factors (explicit loops, no LAPACK).

The Hartigan loop evaluates, per cluster and per point, the squared Mahalanobis norm of a vector
in O(d^2) from the inverse factor L^{-1}. After an accepted move the factor gets an in-place
rank-one update or downdate (O(d^2)) and is re-inverted (O(d^3 / 6), once per move, not per
evaluation). A from-scratch factorisation is needed only when statistics are recomputed.
"""

from __future__ import annotations

import math

import numba

from app.engine.arrays import FloatArray

# A pivot that keeps less than this fraction of its diagonal entry means the matrix is singular
# to working precision (reciprocal condition number about 1e-12, spec cec-ib.md Sec. 3.5).
PIVOT_RTOL = 1e-12
# A variance below this fraction of the matrix's largest is zero up to rounding: a cluster of
# iris flowers whose petal widths are all 0.2 has a computed variance of 7e-33 there (0.12 in
# another feature), which the relative pivot test above accepts (the pivot is all of its own
# tiny diagonal) and which made the energy -5.6 nats where it is +inf (issue 36, found by
# comparing with the authors' Java code, which accepts it too). 1e-14 still allows features
# whose standard deviations differ by a factor of 10^7.
SCALE_RTOL = 1e-14


@numba.njit(nogil=True, cache=True)
def largest_diagonal(a: FloatArray) -> float:
    """The largest diagonal entry of a square matrix."""
    largest = 0.0
    for j in range(a.shape[0]):
        largest = max(largest, a[j, j])
    return largest


@numba.njit(nogil=True, cache=True)
def cholesky_lower(a: FloatArray, out: FloatArray) -> bool:
    """Write the lower factor L of ``a = L L^T`` into ``out``; False if ``a`` is not PD (to
    working precision: a pivot under PIVOT_RTOL of its diagonal entry, or under SCALE_RTOL of
    the largest diagonal entry)."""
    d = a.shape[0]
    floor = SCALE_RTOL * largest_diagonal(a)
    for j in range(d):
        s = a[j, j]
        for p in range(j):
            s -= out[j, p] * out[j, p]
        if not (s > PIVOT_RTOL * abs(a[j, j])) or not (s > floor) or not (s > 0.0):
            return False
        ljj = math.sqrt(s)
        out[j, j] = ljj
        for i in range(j):
            out[i, j] = 0.0
        for i in range(j + 1, d):
            t = a[i, j]
            for p in range(j):
                t -= out[i, p] * out[j, p]
            out[i, j] = t / ljj
    return True


@numba.njit(nogil=True, cache=True)
def invert_lower(chol: FloatArray, out: FloatArray) -> None:
    """``out = L^{-1}`` (lower triangular, zero above the diagonal), O(d^3 / 6)."""
    d = chol.shape[0]
    for j in range(d):
        for i in range(j):
            out[i, j] = 0.0
        out[j, j] = 1.0 / chol[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for p in range(j, i):
                s += chol[i, p] * out[p, j]
            out[i, j] = -s / chol[i, i]


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def mahalanobis_sq(chol_inv: FloatArray, c: int, u: FloatArray) -> float:
    """``u^T (L L^T)^{-1} u = |L^{-1} u|^2`` with ``L^{-1} = chol_inv[c]``.

    A matrix-vector product over full rows (the upper triangle is zero): independent
    multiply-adds, unlike a forward substitution with its divisions and dependency chain. The
    stack of factors is indexed, not sliced: a view per call costs more than the arithmetic.
    """
    d = u.shape[0]
    total = 0.0
    for i in range(d):
        zi = 0.0
        for p in range(d):
            zi += chol_inv[c, i, p] * u[p]
        total += zi * zi
    return total


@numba.njit(nogil=True, cache=True)
def cholesky_rank_one(chol: FloatArray, v: FloatArray, sign: float, work: FloatArray) -> bool:
    """In place: ``L L^T + sign * v v^T`` (sign = +1 update, -1 downdate).

    Returns False when a downdate would leave a non-positive pivot or a pivot is already 0;
    ``chol`` is then garbage and the caller must refactor from the covariance.
    """
    d = v.shape[0]
    for i in range(d):
        work[i] = v[i]
    for k in range(d):
        lkk = chol[k, k]
        xk = work[k]
        r2 = lkk * lkk + sign * xk * xk
        # A zero old pivot (a factor of a singular covariance) cannot be updated: refactor.
        if not (lkk > 0.0 and r2 > PIVOT_RTOL * lkk * lkk):
            return False
        r = math.sqrt(r2)
        c = r / lkk
        s = xk / lkk
        chol[k, k] = r
        for i in range(k + 1, d):
            chol[i, k] = (chol[i, k] + sign * s * work[i]) / c
            work[i] = c * work[i] - s * chol[i, k]
    return True


@numba.njit(nogil=True, cache=True)
def half_logdet(chol: FloatArray) -> float:
    """``0.5 * ln det(L L^T)`` from the diagonal of the factor."""
    total = 0.0
    for i in range(chol.shape[0]):
        total += math.log(chol[i, i])
    return total
