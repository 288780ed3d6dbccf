"""How sure a clustering is about each item: Gaussian posteriors refitted to its clusters.

Any method's result is a partition; a Gaussian per cluster (weight = its share of the items,
mean and covariance of its members) turns the partition into a model that says, for every item,
how strongly each cluster claims it. The same rule serves every method, SMIC's kernel model
included, so questions never depend on which method produced the result.

Small clusters in many dimensions have singular covariances, so each one is shrunk toward the
diagonal of the pooled within-cluster covariance with weight d / (n_c + d): a cluster of a few
points is mostly the pooled shape, a large one mostly its own.

``tied=True`` gives every cluster one shared covariance instead (as linear discriminant analysis
does): the pooled within-cluster covariance, shrunk toward its diagonal with weight
d / (degrees of freedom + d). That is the model to read a few expert-named items with: a
dozen items cannot say how each group is shaped, but together they say how the groups differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from app.engine.arrays import FloatArray, IntArray

# Relative floor on the pooled variances: a constant feature gets a tiny variance, not zero.
_VARIANCE_FLOOR = 1e-9


@dataclass(frozen=True)
class ClusterPosteriors:
    """Per item: the clusters ranked by how strongly they claim it."""

    cluster_ids: IntArray  # (k,) the partition's cluster ids, sorted
    posteriors: FloatArray  # (n, k) P(cluster | item), rows sum to 1
    log_density: FloatArray  # (n, k) log w_c N(x; m_c, S_c)
    means: FloatArray  # (k, d)
    pooled: FloatArray  # (d,) the pooled within-cluster variances the shrinkage aims at

    def top_two(self) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
        """Column indices of each item's first and second cluster and their posteriors (with one
        cluster the second is the first, with posterior 0)."""
        order = np.argsort(-self.posteriors, axis=1, kind="stable")
        first = order[:, 0]
        second = order[:, 1] if order.shape[1] > 1 else order[:, 0]
        rows = np.arange(self.posteriors.shape[0])
        p_first = self.posteriors[rows, first]
        p_second = self.posteriors[rows, second] if order.shape[1] > 1 else np.zeros(rows.size)
        return first, second, p_first, p_second

    def margin_uncertainty(self) -> FloatArray:
        """1 - (p_first - p_second): 0 for an item one cluster owns, 1 for a perfect tie."""
        _, _, p_first, p_second = self.top_two()
        return np.asarray(1.0 - (p_first - p_second), dtype=np.float64)


def cluster_posteriors(
    X: ArrayLike,
    partition: ArrayLike,
    fallback_pooled: ArrayLike | None = None,
    tied: bool = False,
    equal_weights: bool = False,
) -> ClusterPosteriors:
    """Refit a Gaussian to every cluster of ``partition`` (ids >= 0; -1 = unassigned items,
    which get posteriors but shape no cluster) and return every item's posteriors; with
    ``tied`` the clusters share one covariance (module docstring), with ``equal_weights`` no
    cluster is a priori likelier than another (for groups whose sizes say only how often the
    expert was asked about them).

    With fewer assigned items than clusters + dimensions the pooled variances say little (a
    few named items); ``fallback_pooled`` (e.g. another model's ``pooled``) is used instead."""
    data, labels, cluster_ids = _checked(X, partition)
    moments = _cluster_moments(data, labels, cluster_ids)
    pooled = _pooled_variances(moments, data.shape[1], fallback_pooled)
    sizes = moments.sizes
    if equal_weights:
        log_weights = np.full(sizes.size, -np.log(sizes.size))
    else:
        log_weights = np.log(sizes / sizes.sum())
    # tied: one covariance, so one eigendecomposition for every cluster
    shared = _tied_eigen(moments, pooled) if tied else None
    log_density = np.empty((data.shape[0], cluster_ids.size))
    for column, cluster in enumerate(cluster_ids):
        eigen = shared
        if eigen is None:
            eigen = _own_eigen(data[labels == cluster], sizes[column], pooled)
        log_density[:, column] = log_weights[column] + _log_gaussian(
            data, moments.means[column], eigen
        )
    shifted = log_density - log_density.max(axis=1, keepdims=True)
    with np.errstate(under="ignore"):
        weights = np.exp(shifted)
    posteriors = weights / weights.sum(axis=1, keepdims=True)
    return ClusterPosteriors(cluster_ids, posteriors, log_density, moments.means, pooled)


@dataclass(frozen=True)
class _Moments:
    """The assigned items' clusters: each cluster's mean and size, every assigned item
    centred on its cluster's mean, and the degrees of freedom left for a pooled covariance."""

    centred: FloatArray  # (assigned items, d)
    means: FloatArray  # (k, d)
    sizes: FloatArray  # (k,)
    degrees: int  # assigned items - k


def _checked(X: ArrayLike, partition: ArrayLike) -> tuple[FloatArray, IntArray, IntArray]:
    """``X`` as (n, d) finite floats, the partition as int64, and its cluster ids (sorted)."""
    data = np.asarray(X, dtype=np.float64)
    labels = np.asarray(partition).astype(np.int64)
    if data.ndim != 2 or data.shape[0] != labels.shape[0]:
        raise ValueError(
            f"X must be (n, d) with one cluster id per row; got X {data.shape}, "
            f"partition {labels.shape}"
        )
    if not np.isfinite(data).all():
        raise ValueError("X must be finite")
    cluster_ids = np.unique(labels[labels >= 0])
    if cluster_ids.size == 0:
        raise ValueError("the partition has no cluster")
    return data, labels, cluster_ids


def _cluster_moments(data: FloatArray, labels: IntArray, cluster_ids: IntArray) -> _Moments:
    """Each cluster's mean and size over its assigned items, and those items centred."""
    d = data.shape[1]
    assigned = labels >= 0
    centred = np.empty_like(data[assigned])
    means = np.empty((cluster_ids.size, d))
    sizes = np.empty(cluster_ids.size)
    for column, cluster in enumerate(cluster_ids):
        members = labels[assigned] == cluster
        means[column] = data[assigned][members].mean(axis=0)
        centred[members] = data[assigned][members] - means[column]
        sizes[column] = members.sum()
    degrees = centred.shape[0] - cluster_ids.size
    return _Moments(centred, means, sizes, degrees)


def _pooled_variances(moments: _Moments, d: int, fallback_pooled: ArrayLike | None) -> FloatArray:
    """The pooled within-cluster variances the shrinkage aims at (``fallback_pooled`` when
    the assigned items leave fewer than d degrees of freedom), floored."""
    if fallback_pooled is not None and moments.degrees < d:
        pooled = np.asarray(fallback_pooled, dtype=np.float64)
    else:
        pooled = (moments.centred**2).sum(axis=0) / max(moments.degrees, 1)
    return np.maximum(pooled, _VARIANCE_FLOOR * max(float(pooled.max()), 1.0))


def _tied_eigen(moments: _Moments, pooled: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The shared covariance of ``tied``: the pooled within-cluster scatter shrunk toward
    ``pooled`` with weight d / (degrees of freedom + d)."""
    centred, degrees = moments.centred, moments.degrees
    d = centred.shape[1]
    scatter = centred.T @ centred / max(degrees, 1)
    shrink = d / (max(degrees, 0) + d)
    return _eigen((1.0 - shrink) * scatter + shrink * np.diag(pooled))


def _own_eigen(
    members: FloatArray, size: float, pooled: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """A cluster's own covariance (of its ``size`` assigned ``members``) shrunk toward
    ``pooled`` with weight d / (size + d)."""
    d = members.shape[1]
    own = np.cov(members, rowvar=False, bias=True).reshape(d, d)
    shrink = d / (size + d)
    return _eigen((1.0 - shrink) * own + shrink * np.diag(pooled))


def _eigen(covariance: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Eigenvalues (floored) and eigenvectors of a covariance."""
    # The pooled diagonal keeps the shrunk covariance positive definite; eigh is safe for it.
    values, vectors = np.linalg.eigh(covariance)
    values = np.maximum(values, _VARIANCE_FLOOR * max(float(values.max()), 1.0))
    return values, vectors


def _log_gaussian(
    data: FloatArray, mean: FloatArray, eigen: tuple[FloatArray, FloatArray]
) -> FloatArray:
    d = data.shape[1]
    values, vectors = eigen
    projected = (data - mean) @ vectors
    mahalanobis = (projected**2 / values).sum(axis=1)
    return np.asarray(
        -0.5 * (mahalanobis + np.log(values).sum() + d * np.log(2 * np.pi)), dtype=np.float64
    )
