"""Gaussian parts of PPC's EM: log densities and the mu / Sigma M-step (specs/ppc.md Sec. 3.6).

The same numerics as scikit-learn's ``GaussianMixture`` (Cholesky factors of the precisions,
log-determinants from their diagonals, ``reg_covar`` on the covariance diagonals), so that PPC
with no relations follows GaussianMixture's EM trajectory from the same start. Covariance
shapes are GaussianMixture's: (M, d, d) ``full``, (M, d) ``diagonal``, (M,) ``spherical``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.linalg.lapack import dtrtri

from app.engine.arrays import FloatArray
from app.engine.core.families import DIAGONAL, FULL


def precision_cholesky(covariances: FloatArray, family: int) -> FloatArray:
    """Cholesky factors of the precisions; a ValueError says what to change if one is not PD."""
    if family == FULL:
        m, d, _ = covariances.shape
        out = np.empty((m, d, d))
        for k in range(m):
            try:
                chol = np.linalg.cholesky(covariances[k])
            except np.linalg.LinAlgError:
                raise ValueError(
                    f"the covariance of component {k} is singular; increase reg_covar, reduce "
                    "n_components or use covariance='diagonal' or 'spherical'"
                ) from None
            # dtrtri directly: scipy's solve_triangular is slow on tiny matrices when the BLAS
            # threads compete for busy cores.
            inv, info = dtrtri(chol, lower=1)
            if info != 0:
                raise ValueError(f"the covariance of component {k} is singular")
            out[k] = np.tril(inv).T
        return out
    if np.any(covariances <= 0.0):
        raise ValueError("a component has zero variance; increase reg_covar or reduce n_components")
    return np.asarray(1.0 / np.sqrt(covariances))


def log_gaussian(
    X: FloatArray, means: FloatArray, prec_chol: FloatArray, family: int
) -> FloatArray:
    """(n, M) matrix of log N(x_i; mu_k, Sigma_k)."""
    n, d = X.shape
    m = means.shape[0]
    if family == FULL:
        log_det = np.log(np.diagonal(prec_chol, axis1=1, axis2=2)).sum(axis=1)
        out = np.empty((n, m))
        _full_mahalanobis(X, means, np.ascontiguousarray(prec_chol), out)
    elif family == DIAGONAL:
        log_det = np.log(prec_chol).sum(axis=1)
        precisions = prec_chol**2
        out = (
            (means**2 * precisions).sum(axis=1)
            - 2.0 * (X @ (means * precisions).T)
            + (X**2) @ precisions.T
        )
    else:
        log_det = d * np.log(prec_chol)
        precisions = prec_chol**2
        out = (
            (means**2).sum(axis=1) * precisions
            - 2.0 * (X @ means.T * precisions)
            + np.outer((X**2).sum(axis=1), precisions)
        )
    out *= -0.5
    out += log_det - 0.5 * d * math.log(2.0 * math.pi)
    return out


@numba.njit(nogil=True, cache=True)
def _full_mahalanobis(
    X: FloatArray, means: FloatArray, prec_chol: FloatArray, out: FloatArray
) -> None:
    """``out[i, k] = |(x_i - mu_k)^T P_k|^2`` with P_k the precision's Cholesky factor.

    Fused per row, without the (n, d) temporaries of the BLAS form, whose allocation and page
    faults cost more than the arithmetic for small d.
    """
    n, d = X.shape
    m = means.shape[0]
    diff = np.empty(d)
    for i in range(n):
        for k in range(m):
            for s in range(d):
                diff[s] = X[i, s] - means[k, s]
            total = 0.0
            for t in range(d):
                y = 0.0
                for s in range(t + 1):  # P_k is upper triangular
                    y += diff[s] * prec_chol[k, s, t]
                total += y * y
            out[i, k] = total


@numba.njit(nogil=True, cache=True)
def _scatter(X: FloatArray, resp: FloatArray, means: FloatArray, out: FloatArray) -> None:
    """``out[k] += sum_i resp_ik (x_i - mu_k)(x_i - mu_k)^T`` in one pass over the data.

    Fused, for the same reason as ``_full_mahalanobis``: the BLAS form makes an (n, d)
    weighted copy per component. Samples with zero responsibility (clamped ones) are skipped.
    """
    n, d = X.shape
    m = means.shape[0]
    diff = np.empty(d)
    for i in range(n):
        for k in range(m):
            r = resp[i, k]
            if r == 0.0:
                continue
            for s in range(d):
                diff[s] = X[i, s] - means[k, s]
            for s in range(d):
                v = r * diff[s]
                for t in range(s + 1):
                    out[k, s, t] += v * diff[t]
    for k in range(m):
        for s in range(d):
            for t in range(s):
                out[k, t, s] = out[k, s, t]


def gaussian_m_step(
    X: FloatArray, resp: FloatArray, family: int, reg_covar: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Soft counts n_k (plus 10 eps, as scikit-learn), means and covariances (+ reg_covar)."""
    nk = resp.sum(axis=0) + 10.0 * np.finfo(resp.dtype).eps
    means = (resp.T @ X) / nk[:, np.newaxis]
    d = X.shape[1]
    if family == FULL:
        covariances = np.zeros((means.shape[0], d, d))
        _scatter(X, resp, means, covariances)
        for k in range(means.shape[0]):
            covariances[k] /= nk[k]
            covariances[k].flat[:: d + 1] += reg_covar
        return nk, means, covariances
    avg_x2 = (resp.T @ (X * X)) / nk[:, np.newaxis]
    variances = avg_x2 - means**2 + reg_covar
    if family == DIAGONAL:
        return nk, means, variances
    return nk, means, variances.mean(axis=1)


def tie(nk: FloatArray, covariances: FloatArray) -> FloatArray:
    """The tied M-step: every component gets the soft-count-weighted mean of the per-component
    full covariances, which is the pooled within-component scatter (+ reg_covar), as
    GaussianMixture(covariance_type='tied')."""
    pooled = np.tensordot(nk / nk.sum(), covariances, axes=1)
    return np.repeat(pooled[np.newaxis], covariances.shape[0], axis=0)


def data_covariance(X: FloatArray, family: int, m: int, reg_covar: float) -> FloatArray:
    """The sample covariance of all of X (+ reg_covar) for every component: the default init."""
    d = X.shape[1]
    cov = np.atleast_2d(np.cov(X, rowvar=False, bias=True)) + reg_covar * np.eye(d)
    if family == FULL:
        return np.repeat(cov[np.newaxis], m, axis=0)
    if family == DIAGONAL:
        return np.repeat(np.diag(cov)[np.newaxis], m, axis=0)
    return np.full(m, float(np.diag(cov).mean()))
