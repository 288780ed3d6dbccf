"""Maximum-likelihood Gaussian parameters of a hard partition, in GaussianMixture's shapes.

C4S and C3L keep their cluster statistics inside the numba state while fitting; their shells
recompute the parameters of the final partition here, once, so that ``predict`` can apply the
CEC rule argmax_i p_i f_i(x) to new points exactly as ``CEC.predict`` does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from app.engine.gaussian_families import family_covariances

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def partition_gaussians(
    X: FloatArray, labels: IntArray, family: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, means, covariances) of clusters 0..max(labels): MLE (ddof = 0) moments."""
    n, d = X.shape
    k = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    means = np.zeros((k, d))
    np.add.at(means, labels, X)
    means /= counts[:, None]
    cov = np.empty((k, d, d))
    for c in range(k):
        centred = X[labels == c] - means[c]
        cov[c] = centred.T @ centred / counts[c]
    return counts / n, means, family_covariances(family, cov)
