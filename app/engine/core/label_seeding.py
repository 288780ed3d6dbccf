"""Starts of CEC-IB from partial labels (docs/cec-ib.md, "Starting from the labels").

Random k-means++ starts ignore the labels, and on wine or breast cancer with 10% of the items
labeled Hartigan moves from them settle in partitions that mix the classes. Starting where
SeededKMeans starts, one centre per category at the mean of its labeled points, lets the labels
choose the basin; the IB term then keeps the clusters consistent.

With one cluster per category the two starts above are deterministic, and on iris and wine
(10% labeled) they often settle above the energy of the partition reached from the true classes.
Further restarts take the category means of a bootstrap resample of the labeled items
(``resampled_categories``): still one centre per category near its labeled items, so the search
stays in label-guided basins (random k-means++ starts found lower energies on breast cancer that
mix the classes), but from different places (docs/cec-ib.md). Among those restarts the one
whose clusters agree with more labeled items wins, energy breaking ties
(``labeled_agreement``): on digits the lowest energy often sits in a partition that merges or
mixes labeled categories.
"""

from __future__ import annotations

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.seeding import assign_nearest_centre

# Lloyd iterations of the refined start; seeded k-means on the data sets measured stops in 5-15.
LLOYD_ITER = 50


def whitened(X: FloatArray) -> FloatArray:
    """X mapped so that its covariance is the identity (Z = (X - m) L^{-T} with S = L L^T);
    affine maps of X then change Z by an orthogonal map only. A singular S falls back to
    features scaled to unit variance (constant ones left as they are)."""
    centred = X - X.mean(axis=0)
    try:
        chol = np.linalg.cholesky(centred.T @ centred / X.shape[0])
        return np.ascontiguousarray(np.linalg.solve(chol, centred.T).T)
    except np.linalg.LinAlgError:
        scale = centred.std(axis=0)
        scale[scale == 0.0] = 1.0
        return np.ascontiguousarray(centred / scale)


def label_seeded_partition(
    X: FloatArray,
    categories: IntArray,
    n_categories: int,
    n_clusters: int,
    rng: np.random.RandomState,
    *,
    refine: bool = False,
) -> IntArray:
    """Cluster j < n_categories starts at the mean of the points labeled j; the other
    n_clusters - n_categories centres are drawn by D^2 sampling against the centres so far
    (k-means++ continued). Unlabeled points go to the nearest centre. Distances are measured
    after whitening (``whitened``), since CEC's energy changes only by a constant under affine
    maps of X, and the start should not change at all.

    With ``refine``, Lloyd iterations (k-means in the whitened space, at most ``LLOYD_ITER``)
    move the centres first: SeededKMeans' whole fit, as GaussianMixture starts from k-means.
    Needs 1 <= n_categories <= n_clusters and every category present in ``categories``.
    """
    Z = whitened(X)
    centres = np.empty((n_clusters, X.shape[1]))
    labeled = categories >= 0
    sums = np.zeros((n_categories, X.shape[1]))
    np.add.at(sums, categories[labeled], Z[labeled])
    centres[:n_categories] = (
        sums / np.bincount(categories[labeled], minlength=n_categories)[:, None]
    )
    dist = np.full(X.shape[0], np.inf)
    for j in range(n_categories):
        dist = np.minimum(dist, ((Z - centres[j]) ** 2).sum(axis=1))
    found = n_categories
    while found < n_clusters and dist.sum() > 0.0:
        chosen = int(np.searchsorted(np.cumsum(dist), rng.uniform() * dist.sum(), side="right"))
        centres[found] = Z[min(chosen, Z.shape[0] - 1)]
        dist = np.minimum(dist, ((Z - centres[found]) ** 2).sum(axis=1))
        found += 1
    assign = np.empty(X.shape[0], dtype=np.int64)
    assign_nearest_centre(Z, centres[:found], assign)
    if refine:
        lloyd(Z, centres[:found], assign)
    return assign


def resampled_categories(
    categories: IntArray, n_categories: int, rng: np.random.RandomState
) -> IntArray:
    """``categories`` with each category's labeled items replaced by a bootstrap resample of them
    (drawn with replacement, kept once: about 63% of them); the others become unlabeled. Every
    category keeps at least one labeled item."""
    out = np.full_like(categories, -1)
    for c in range(n_categories):
        members = np.flatnonzero(categories == c)
        out[rng.choice(members, members.shape[0], replace=True)] = c
    return out


def labeled_agreement(
    assign: IntArray, categories: IntArray, n_clusters: int, n_categories: int
) -> int:
    """Labeled items whose cluster's most frequent category is their own (ties: one of them)."""
    labeled = categories >= 0
    table = np.zeros((n_clusters, n_categories), dtype=np.int64)
    np.add.at(table, (assign[labeled], categories[labeled]), 1)
    return int(table.max(axis=1).sum())


def lloyd(Z: FloatArray, centres: FloatArray, assign: IntArray) -> None:
    """k-means iterations from ``assign`` until no point changes (at most ``LLOYD_ITER``);
    an emptied cluster keeps its centre, so the result is deterministic."""
    new = np.empty_like(assign)
    for _ in range(LLOYD_ITER):
        for c in range(centres.shape[0]):
            members = assign == c
            if members.any():
                centres[c] = Z[members].mean(axis=0)
        assign_nearest_centre(Z, centres, new)
        if np.array_equal(new, assign):
            return
        assign[:] = new
