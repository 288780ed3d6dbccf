"""The CEC-IB cost of a given partition, computed from scratch with numpy (eqs. 2, 10, 11).

This is the reference the optimiser is tested against: it shares no code with the incremental
kernels. ``beta = 0`` (or no labels) gives the plain CEC cost of eq. (2). Natural log throughout.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

_FAMILIES = ("full", "diagonal", "spherical", "unit")


def gaussian_cost(points: ArrayLike, covariance: str = "full") -> float:
    """Minimal cross-entropy H(N(m, S)) of a point set within a Gaussian family; +inf if singular.

    ``full``: (d/2) ln(2 pi e) + (1/2) ln det S; ``diagonal``: S replaced by its diagonal;
    ``spherical``: S replaced by (tr S / d) I; ``unit``: the cross-entropy with N(m, I), the
    fixed-covariance family behind C4S's tied spherical fit, (d/2) ln(2 pi) + (1/2) tr S. S is
    the MLE covariance (divided by |Y|).
    """
    if covariance not in _FAMILIES:
        raise ValueError(f"covariance must be one of {_FAMILIES}, got {covariance!r}")
    Y = np.asarray(points, dtype=np.float64)
    d = Y.shape[1]
    centered = Y - Y.mean(axis=0)
    S = centered.T @ centered / Y.shape[0]
    const = 0.5 * d * math.log(2.0 * math.pi * math.e)
    if covariance == "full":
        sign, logdet = np.linalg.slogdet(S)
        if sign <= 0 or np.linalg.cond(S) > 1e12:
            return math.inf
        return const + 0.5 * float(logdet)
    variances = np.diag(S)
    if covariance == "unit":
        return 0.5 * d * math.log(2.0 * math.pi) + 0.5 * float(variances.sum())
    if covariance == "diagonal":
        if np.any(variances <= 0):
            return math.inf
        return const + 0.5 * float(np.log(variances).sum())
    trace = float(variances.sum())
    if trace <= 0:
        return math.inf
    return const + 0.5 * d * math.log(trace / d)


def label_entropy(categories: ArrayLike) -> float:
    """Entropy (nats) of the labels of the labeled points (-1 = unlabeled); 0 if none."""
    z = np.asarray(categories)
    z = z[z != -1]
    if z.size == 0:
        return 0.0
    _, counts = np.unique(z, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def cluster_energies(
    X: ArrayLike,
    partition: ArrayLike,
    y: ArrayLike | None = None,
    beta: float = 0.0,
    covariance: str = "full",
) -> dict[int, float]:
    """E_beta(Y_i) of eq. (11) for every non-empty cluster id in ``partition``."""
    X = np.asarray(X, dtype=np.float64)
    partition = np.asarray(partition)
    n = X.shape[0]
    y_arr = np.full(n, -1) if y is None else np.asarray(y)
    energies: dict[int, float] = {}
    for cluster in np.unique(partition):
        members = partition == cluster
        p = members.sum() / n
        h = label_entropy(y_arr[members])
        gauss = gaussian_cost(X[members], covariance)
        energies[int(cluster)] = p * (-math.log(p) + gauss + beta * h)
    return energies


def cec_ib_energy(
    X: ArrayLike,
    partition: ArrayLike,
    y: ArrayLike | None = None,
    beta: float = 0.0,
    covariance: str = "full",
) -> float:
    """E_beta(X, Z; Y) of eq. (10): H(Y) + sum_i p_i (H(N(m_i, S_i)) + beta H(Z | Y_i cap X_l)).

    ``y[i] == -1`` marks an unlabeled point; a cluster without labeled points has label term 0
    (spec decision 7.6).
    """
    return float(sum(cluster_energies(X, partition, y, beta, covariance).values()))
