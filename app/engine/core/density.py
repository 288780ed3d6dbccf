"""ln(p_i f_i(x)) for fitted CEC components: the CEC assignment rule of eq. (1) for new points."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular

from app.engine.arrays import FloatArray
from app.engine.core.families import DIAGONAL, FULL

_CHUNK = 65536  # rows per block, so memory stays O(chunk * k) for large X


def _component_log_density(
    X: FloatArray, mean: FloatArray, covariance: FloatArray, family: int
) -> FloatArray:
    d = X.shape[1]
    centered = X - mean
    if family == FULL:
        chol = np.linalg.cholesky(covariance)
        z = solve_triangular(chol, centered.T, lower=True)
        maha = np.einsum("ij,ij->j", z, z)
        half_logdet = float(np.log(np.diag(chol)).sum())
    elif family == DIAGONAL:
        maha = (centered**2 / covariance).sum(axis=1)
        half_logdet = 0.5 * float(np.log(covariance).sum())
    else:
        variance = float(covariance)
        maha = (centered**2).sum(axis=1) / variance
        half_logdet = 0.5 * d * math.log(variance)
    return np.asarray(-0.5 * (d * math.log(2.0 * math.pi) + maha) - half_logdet)


def weighted_log_densities(
    X: FloatArray,
    weights: FloatArray,
    means: FloatArray,
    covariances: FloatArray,
    family: int,
) -> FloatArray:
    """(n, k) matrix of ln p_i + ln N(x; m_i, S_i) in the family's parametrisation."""
    out = np.empty((X.shape[0], weights.shape[0]))
    for start in range(0, X.shape[0], _CHUNK):
        block = X[start : start + _CHUNK]
        for i in range(weights.shape[0]):
            out[start : start + _CHUNK, i] = math.log(weights[i]) + _component_log_density(
                block, means[i], covariances[i], family
            )
    return out


def assign_by_density(
    X: FloatArray,
    weights: FloatArray,
    means: FloatArray,
    covariances: FloatArray,
    family: int,
) -> NDArray[np.int64]:
    """argmax_i p_i f_i(x) for every row (first index on ties)."""
    labels = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], _CHUNK):
        block = X[start : start + _CHUNK]
        scores = weighted_log_densities(block, weights, means, covariances, family)
        labels[start : start + _CHUNK] = scores.argmax(axis=1)
    return labels
