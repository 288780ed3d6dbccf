"""C4S's ``covariance='tied_spherical'``: CEC over spherical Gaussians that share one variance.

The cost of a partition into clusters with shares p_i under N(m_i, v I) with one v for all is

    E(v) = sum_i p_i (-ln p_i) + (d/2) ln(2 pi v) + SSE / (2 n v),

where SSE is the within-cluster sum of squares. For a fixed v this is the CEC cost of the
fixed-covariance family N(m, I) on X / sqrt(v) (``UNIT`` in app/engine/core/families.py, up to
the constant (d/2) ln v), which the Hartigan kernels minimise over partitions; for a fixed
partition the best v is the pooled variance SSE / (n d), where E becomes the tied cost

    E* = sum_i p_i (-ln p_i) + (d/2) ln(2 pi e v).

C4S alternates the two (``ROUNDS`` at most; each round is a whole C4S search at one v, so every
constraint holds throughout) and keeps the partition of lowest E*. This is k-means with CEC's
entropy term: the clusters share a radius, as the peers' PCKMeans and MPCKMeans assume, where
``spherical`` lets each cluster keep its own (on breast cancer that lets one class swallow the
other's fringe; docs/constraints.md).
"""

from __future__ import annotations

import math

import numpy as np

from app.engine.arrays import FloatArray, IntArray

# Most whole C4S searches per fit; the pooled variance settles within 1 % in two or three rounds
# on the benchmark data, each further round costs one more search.
ROUNDS = 4
VARIANCE_RTOL = 0.01


def start_variance(X: FloatArray, n_clusters: int) -> float:
    """The first round's shared variance: the per-dimension variance of X shrunk as if k equal
    balls shared its volume (radius k^(-1/d)); 1 for constant X (every partition costs alike)."""
    d = X.shape[1]
    total = float(np.var(X, axis=0).mean())
    if not total > 0.0:
        return 1.0
    return total * n_clusters ** (-2.0 / d)


def pooled_variance(X: FloatArray, clusters: IntArray) -> float:
    """SSE / (n d) of the partition ``clusters`` (ids 0..k-1, not necessarily all used); floored
    at a tiny share of X's variance so a partition into constant clusters stays finite."""
    n, d = X.shape
    counts = np.maximum(np.bincount(clusters), 1)
    means = np.zeros((counts.shape[0], d))
    np.add.at(means, clusters, X)
    means /= counts[:, None]
    sse = float(((X - means[clusters]) ** 2).sum())
    floor = 1e-12 * max(float(np.var(X, axis=0).mean()), 1e-300)
    return max(sse / (n * d), floor)


def tied_cost(clusters: IntArray, variance: float, d: int) -> float:
    """E* of the partition, nats: entropy of the cluster shares plus (d/2) ln(2 pi e v)."""
    counts = np.bincount(clusters)
    p = counts[counts > 0] / clusters.shape[0]
    return float(-(p * np.log(p)).sum()) + 0.5 * d * math.log(2.0 * math.pi * math.e * variance)


def settled(old: float, new: float) -> bool:
    """Whether another round would fit at (nearly) the same variance."""
    return abs(new - old) <= VARIANCE_RTOL * old
