"""Maximum-likelihood Gaussian parameters of a hard partition, in GaussianMixture's shapes.

C4S keeps its cluster statistics inside the numba state of items while fitting; its shell
recomputes the parameters of the final partition here, once, so that ``predict`` can apply the
CEC rule argmax_i p_i f_i(x) to new points exactly as ``CEC.predict`` does.
"""

from __future__ import annotations

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.families import family_covariances
from app.engine.core.moments import moments_from_labels


def partition_gaussians(
    X: FloatArray, labels: IntArray, family: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, means, covariances) of clusters 0..max(labels): MLE (ddof = 0) moments."""
    n, d = X.shape
    k = int(labels.max()) + 1
    size, mean, cov = np.empty(k), np.empty((k, d)), np.empty((k, d, d))
    moments_from_labels(X, np.ascontiguousarray(labels, dtype=np.int64), size, mean, cov)
    return size / n, mean, family_covariances(family, cov)
