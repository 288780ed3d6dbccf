"""Sparse local-scaling kernel of SMIC (spec smic.md Sec. 1.4, decisions A1, A2, A12).

The neighbour search runs once for the largest candidate t; every kernel for t <= t_max is then
built from the first t columns of the same sorted neighbour table.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import KDTree, NearestNeighbors

from app.engine.arrays import FloatArray, IndexArray

# Brute force evaluates n distances per query, as one BLAS product; a k-d tree evaluates fewer,
# each about 20 times as costly (make_blobs, d = 10: the tree visited 0.15 n points per query and
# was 2.5-4x slower than brute force). Below this size brute force takes well under a second.
PROBE_MIN_POINTS = 20_000
# The tree is kept when seeded probe queries visit fewer than this fraction of the points each:
# data of low intrinsic dimension, such as an image's pixel features (the coffee demo, 240,000
# pixels, d = 8: 0.002 n per query, 3 s instead of brute force's 118 s).
TREE_VISIT_FRACTION = 0.02
PROBE_QUERIES = 200


def neighbour_algorithm(X: FloatArray, k: int) -> str:
    """'kd_tree' or 'brute' for the k nearest neighbours of every row of X.

    Trees always pay off in very low dimension (d <= 5). Above it, a tree built on X answers
    PROBE_QUERIES rows drawn with a fixed seed, and its count of distance evaluations decides;
    the count does not depend on timing, so the same data always gets the same search.
    """
    n, d = X.shape
    if d <= 5:
        return "kd_tree"
    if n < PROBE_MIN_POINTS:
        return "brute"
    tree = KDTree(X)
    probes = np.random.RandomState(0).choice(n, PROBE_QUERIES, replace=False)
    tree.reset_n_calls()
    tree.query(X[probes], k=min(k + 1, n))
    visits = tree.get_n_calls() / PROBE_QUERIES
    return "kd_tree" if visits < TREE_VISIT_FRACTION * n else "brute"


def nearest_neighbors(
    X: FloatArray, t_max: int, algorithm: str | None = None
) -> tuple[IndexArray, FloatArray]:
    """The t_max nearest *other* points of every row of X, sorted by (distance, index).

    scikit-learn finds the candidates; the distances are then recomputed directly, because its
    brute-force path uses the |x|^2 + |y|^2 - 2 x.y expansion, which turns exact duplicates into
    tiny positive distances and would hide the sigma = 0 case (A2).
    """
    n = X.shape[0]
    if not 1 <= t_max <= n - 1:
        raise ValueError(f"need 1 <= t_max <= n - 1 = {n - 1}, got t_max={t_max}")
    algorithm = neighbour_algorithm(X, t_max) if algorithm is None else algorithm
    search = NearestNeighbors(n_neighbors=t_max, algorithm=algorithm).fit(X)
    idx = search.kneighbors(return_distance=False).astype(np.intp)
    dist = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(axis=2))
    order = np.lexsort((idx, dist), axis=-1)
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1)


def zero_scale_points(dist: FloatArray, t: int) -> IndexArray:
    """Points whose t-th neighbour is an exact duplicate, so sigma_i = 0 and eq. 7 is 0/0."""
    return np.flatnonzero(dist[:, t - 1] <= 0.0).astype(np.intp)


def local_scaling_kernel(idx: IndexArray, dist: FloatArray, t: int) -> sp.csr_matrix:
    """K of eq. 7 on the symmetrised t-NN graph, with K_ii = 1 (decision A1), as CSR."""
    n = idx.shape[0]
    bad = zero_scale_points(dist, t)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"point {i} has at least {t} exact duplicate(s) (e.g. point {int(idx[i, 0])}), so its "
            f"local scale sigma_{i} (distance to its {t}-th nearest neighbour) is 0 and the kernel "
            f"is undefined; {bad.size} point(s) are affected. Remove duplicate rows or use a "
            f"larger n_neighbors."
        )
    sigma = dist[:, t - 1]
    rows = np.repeat(np.arange(n, dtype=np.intp), t)
    cols = idx[:, :t].ravel()
    d = dist[:, :t].ravel()
    vals = np.exp(-(d * d) / (2.0 * sigma[rows] * sigma[cols]))
    directed = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    # eq. 7 is symmetric in (i, j), so both directions carry the same value where both exist.
    undirected = directed.maximum(directed.T)
    return sp.csr_matrix(undirected + sp.identity(n, format="csr"))


def normalize_symmetric(K: sp.csr_matrix) -> sp.csr_matrix:
    """D^{-1/2} K D^{-1/2} with D_ii = sum_j K_ij (the degree-normalised option, A12)."""
    degree = np.asarray(K.sum(axis=1)).ravel()
    scale = sp.diags(1.0 / np.sqrt(degree))
    return sp.csr_matrix(scale @ K @ scale)
