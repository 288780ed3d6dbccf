"""Clustering quality measures for the whole engine.

* ``normalized_mutual_info``: NMI = 2 I(Y; X) / (H(Y) + H(X)) (Ana & Jain 2003, as in the CEC-IB
  paper, specs/cec-ib.md Sec. 5.3), which is scikit-learn's arithmetic-mean NMI.
* ``adjusted_rand_index``: Hubert-Arabie ARI, scikit-learn's ``adjusted_rand_score``.
* constraint-satisfaction rates for pairwise constraints and for partial labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from app.engine.core.contingency import contingency, label_pair_counts


def normalized_mutual_info(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """2 I / (H_true + H_pred), natural log (the ratio does not depend on the base)."""
    return float(
        normalized_mutual_info_score(labels_true, labels_pred, average_method="arithmetic")
    )


def adjusted_rand_index(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Adjusted Rand index (1 for identical partitions, about 0 for independent ones)."""
    return float(adjusted_rand_score(labels_true, labels_pred))


@dataclass(frozen=True)
class ConstraintSatisfaction:
    """Fractions of satisfied constraints; ``nan`` when there are none of a kind."""

    must_link: float
    cannot_link: float
    overall: float


def _rate(satisfied: int, total: int) -> float:
    return satisfied / total if total else float("nan")


def _pairs(pairs: ArrayLike | None) -> np.ndarray:
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64)
    arr = np.asarray(pairs, dtype=np.int64)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"constraints must be an (m, 2) array of index pairs, got {arr.shape}")
    return arr


def pairwise_constraint_satisfaction(
    labels: ArrayLike,
    must_link: ArrayLike | None = None,
    cannot_link: ArrayLike | None = None,
) -> ConstraintSatisfaction:
    """Fraction of must-link pairs in one cluster and of cannot-link pairs in different ones."""
    lab = np.asarray(labels)
    ml = _pairs(must_link)
    cl = _pairs(cannot_link)
    ml_ok = int((lab[ml[:, 0]] == lab[ml[:, 1]]).sum())
    cl_ok = int((lab[cl[:, 0]] != lab[cl[:, 1]]).sum())
    return ConstraintSatisfaction(
        must_link=_rate(ml_ok, ml.shape[0]),
        cannot_link=_rate(cl_ok, cl.shape[0]),
        overall=_rate(ml_ok + cl_ok, ml.shape[0] + cl.shape[0]),
    )


def label_constraint_satisfaction(labels: ArrayLike, y: ArrayLike) -> ConstraintSatisfaction:
    """The pairwise rates for the constraints implied by partial labels (-1 = unlabeled).

    Every pair of labeled points is a must-link if their labels agree and a cannot-link
    otherwise, as in the paper's c-GMM baseline (spec Sec. 5.2). Counted from the contingency
    table in O(n + k m), without listing the pairs.
    """
    lab = np.asarray(labels)
    z = np.asarray(y)
    if lab.shape != z.shape:
        raise ValueError(f"labels and y must have the same shape, got {lab.shape} and {z.shape}")
    keep = z != -1
    _, clusters = np.unique(lab[keep], return_inverse=True)
    _, cats = np.unique(z[keep], return_inverse=True)
    shape = (int(clusters.max(initial=-1)) + 1, int(cats.max(initial=-1)) + 1)
    return label_satisfaction_from_contingency(contingency(clusters, cats, shape))


def label_satisfaction_from_contingency(table: NDArray[np.int64]) -> ConstraintSatisfaction:
    """The label-pair rates from a (cluster x label) table of the labeled items."""
    same_cat, same_both, cannot, cl_ok = label_pair_counts(table)
    return ConstraintSatisfaction(
        must_link=_rate(same_both, same_cat),
        cannot_link=_rate(cl_ok, cannot),
        overall=_rate(same_both + cl_ok, same_cat + cannot),
    )
