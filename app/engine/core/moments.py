"""Cluster moments (weight, mean, MLE covariance) with exact incremental updates.

A cluster is summarised by its total weight W (the point count for unit weights), its mean m and
its maximum-likelihood covariance S (divided by W, not W - 1). Every update here is the exact
union / difference formula of Tabor & Spurek (2014, Thm 4.3), quoted in specs/c4s.md Sec. 2.3:

* a weighted point (w, x) is a group with zero covariance, so adding or removing it changes S by a
  rescaling plus a rank-one term: ``S' = (W/W') (S +- (w/W') u u^T)`` with ``u = x - m``;
* a weighted group (w, m_g, S_g) adds ``(w/W') S_g`` as well, which is not rank-one in general.

All functions update ``mean`` and ``cov`` in place and return the new weight.
"""

from __future__ import annotations

import numba

from app.engine.arrays import FloatArray, IntArray


@numba.njit(nogil=True, cache=True)
def add_point(mean: FloatArray, cov: FloatArray, size: float, x: FloatArray, w: float) -> float:
    """Add point ``x`` with weight ``w`` to a cluster of weight ``size``."""
    new_size = size + w
    if size <= 0.0:
        for i in range(x.shape[0]):
            mean[i] = x[i]
            for j in range(x.shape[0]):
                cov[i, j] = 0.0
        return new_size
    rho = size / new_size
    c = w / new_size
    d = x.shape[0]
    for i in range(d):
        ui = x[i] - mean[i]
        for j in range(d):
            cov[i, j] = rho * (cov[i, j] + c * ui * (x[j] - mean[j]))
    for i in range(d):
        mean[i] += c * (x[i] - mean[i])
    return new_size


@numba.njit(nogil=True, cache=True)
def _clear(mean: FloatArray, cov: FloatArray) -> None:
    """An emptied cluster's moments: all zero."""
    d = mean.shape[0]
    for i in range(d):
        mean[i] = 0.0
        for j in range(d):
            cov[i, j] = 0.0


@numba.njit(nogil=True, cache=True)
def remove_point(mean: FloatArray, cov: FloatArray, size: float, x: FloatArray, w: float) -> float:
    """Remove point ``x`` with weight ``w`` (a member) from a cluster of weight ``size``."""
    new_size = size - w
    d = x.shape[0]
    if new_size <= 0.0:
        _clear(mean, cov)
        return 0.0
    rho = size / new_size
    c = w / new_size
    for i in range(d):
        ui = x[i] - mean[i]
        for j in range(d):
            cov[i, j] = rho * (cov[i, j] - c * ui * (x[j] - mean[j]))
    for i in range(d):
        mean[i] -= c * (x[i] - mean[i])
    return new_size


@numba.njit(nogil=True, cache=True)
def add_group(
    mean: FloatArray,
    cov: FloatArray,
    size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    g_size: float,
) -> float:
    """Merge a disjoint group (weight, mean, MLE covariance) into the cluster."""
    new_size = size + g_size
    d = mean.shape[0]
    if size <= 0.0:
        for i in range(d):
            mean[i] = g_mean[i]
            for j in range(d):
                cov[i, j] = g_cov[i, j]
        return new_size
    a = size / new_size
    b = g_size / new_size
    for i in range(d):
        di = mean[i] - g_mean[i]
        for j in range(d):
            cov[i, j] = a * cov[i, j] + b * g_cov[i, j] + a * b * di * (mean[j] - g_mean[j])
    for i in range(d):
        mean[i] = a * mean[i] + b * g_mean[i]
    return new_size


@numba.njit(nogil=True, cache=True)
def remove_group(
    mean: FloatArray,
    cov: FloatArray,
    size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    g_size: float,
) -> float:
    """Remove a group (a subset of the cluster, given by its own moments) from the cluster."""
    new_size = size - g_size
    d = mean.shape[0]
    if new_size <= 0.0:
        _clear(mean, cov)
        return 0.0
    q = size / new_size
    r = g_size / new_size
    for i in range(d):
        di = mean[i] - g_mean[i]
        for j in range(d):
            cov[i, j] = q * cov[i, j] - r * g_cov[i, j] - q * r * di * (mean[j] - g_mean[j])
    for i in range(d):
        mean[i] = q * mean[i] - r * g_mean[i]
    return new_size


@numba.njit(nogil=True, cache=True)
def moments_from_labels(
    X: FloatArray,
    assign: IntArray,
    size: FloatArray,
    mean: FloatArray,
    cov: FloatArray,
) -> None:
    """Unit-weight moments of every cluster from scratch (two passes, for accuracy)."""
    n, d = X.shape
    k = size.shape[0]
    size[:] = 0.0
    mean[:] = 0.0
    cov[:] = 0.0
    for i in range(n):
        c = assign[i]
        size[c] += 1.0
        for t in range(d):
            mean[c, t] += X[i, t]
    for c in range(k):
        if size[c] > 0.0:
            for t in range(d):
                mean[c, t] /= size[c]
    for i in range(n):
        c = assign[i]
        for s in range(d):
            ds = X[i, s] - mean[c, s]
            for t in range(s + 1):
                cov[c, s, t] += ds * (X[i, t] - mean[c, t])
    for c in range(k):
        if size[c] > 0.0:
            for s in range(d):
                for t in range(s + 1):
                    v = cov[c, s, t] / size[c]
                    cov[c, s, t] = v
                    cov[c, t, s] = v
