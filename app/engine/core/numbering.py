"""Cluster numbers that follow an earlier result.

A clustering's numbers are arbitrary: refit with one more constraint and the same groups can come
back numbered differently. Where numbers are shown as colours (the workspace colours cluster c
with palette entry c), every re-run would then repaint the plot. ``numbering_like`` renumbers a
new partition so that it agrees with a reference partition on as many items as possible: the
matching of new clusters to the reference numbers a k-cluster result can use (0..k-1) with the
largest total overlap (Hungarian method on the contingency table); clusters that share no item
with their match take the numbers left free, in their own order.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linear_sum_assignment

from app.engine.arrays import IntArray
from app.engine.core.contingency import contingency


def numbering_like(labels: ArrayLike, reference: ArrayLike) -> IntArray:
    """``order`` with ``order[c]`` the new number of cluster c, a permutation of 0..k-1 where
    k = max(labels) + 1, so that ``order[labels]`` agrees with ``reference`` on the most items.

    Both are one cluster number per item (negative: no cluster, ignored). Ties between equally
    good matchings go to the one scipy's solver returns first (deterministic).
    """
    new = np.asarray(labels, dtype=np.int64)
    ref = np.asarray(reference, dtype=np.int64)
    if new.shape != ref.shape or new.ndim != 1:
        raise ValueError(
            f"labels and reference must be 1-d and of one length, got {new.shape}, {ref.shape}"
        )
    k = int(new.max()) + 1 if new.size else 0
    both = (new >= 0) & (ref >= 0)
    if k == 0 or not both.any():
        return np.arange(k, dtype=np.int64)
    # Only numbers 0..k-1 can be given, so only those reference clusters can be matched.
    inside = both & (ref < k)
    return numbering_from_overlap(contingency(new[inside], ref[inside], (k, k)))


def numbering_from_overlap(overlap: NDArray[np.int64]) -> IntArray:
    """``numbering_like``'s order from the (k x k) table of items shared by new cluster c and
    reference number r < k (summed over chunks in a data-parallel run)."""
    k = overlap.shape[0]
    rows, cols = linear_sum_assignment(overlap, maximize=True)
    order = np.full(k, -1, dtype=np.int64)
    matched = overlap[rows, cols] > 0
    order[rows[matched]] = cols[matched]
    # A cluster sharing no item with its partner keeps no claim to it: free numbers in order.
    unmatched = np.flatnonzero(order < 0)
    order[unmatched] = np.setdiff1d(np.arange(k), order[order >= 0])
    return order
