"""Closed forms from the CEC-IB theory (Sec. 4 of the paper; specs/cec-ib.md Sec. 4, T10-T11)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

#: beta_0 of Example 4.1: 1 + ln sqrt(1 - 2/pi) / ln 2 = 0.269776... ("CEC-IB_0").
BETA0 = 1.0 + 0.5 * math.log(1.0 - 2.0 / math.pi) / math.log(2.0)


def _logdet_cov(points: np.ndarray) -> float:
    centered = points - points.mean(axis=0)
    sign, logdet = np.linalg.slogdet(centered.T @ centered / points.shape[0])
    if sign <= 0:
        raise ValueError("a cluster in the merge has a singular covariance")
    return float(logdet)


def critical_beta(X: ArrayLike, partition: ArrayLike, merged: ArrayLike) -> float:
    """beta_0 of Theorem 4.2 (eqs. 14 and 20) for merging the clusters ids in ``merged``.

    beta_0 = 1 + [sum_i (p_i / 2q) ln(det S_i / det S)] / H(p_i / q), with q the total weight of
    the merged clusters and S the covariance of their union. Above beta_0 keeping the clusters
    apart costs no more than merging them (for proportional coarsenings of the labels).
    """
    data = np.asarray(X, dtype=np.float64)
    labels = np.asarray(partition)
    ids = np.unique(np.asarray(merged))
    if ids.shape[0] < 2:
        raise ValueError("merged must name at least two clusters")
    n = labels.shape[0]
    union = np.isin(labels, ids)
    q = union.sum() / n
    logdet_union = _logdet_cov(data[union])
    weighted_log_ratio = 0.0
    entropy = 0.0
    for cluster in ids:
        members = labels == cluster
        p = members.sum() / n
        weighted_log_ratio += p / (2.0 * q) * (_logdet_cov(data[members]) - logdet_union)
        entropy -= (p / q) * math.log(p / q)
    return 1.0 + weighted_log_ratio / entropy
