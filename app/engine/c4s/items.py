"""C4s step 2: split every initial chunklet by CEC on its own points (spec c4s.md Sec. 2.4, 3.3).

The result is the family of *items* the global stage moves as blocks: one-point items (free or
constrained points, addressed by their row of X) and groups (final chunklets of >= 2 points,
summarised by weight, mean and MLE covariance). Items are numbered by their first point, so
without constraints item t is point t and the global stage is exactly the core CEC sweep.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.cec_fit import SingularDataError, fit_cec, min_cluster_size


class Items(NamedTuple):
    """The global stage's units; group moments are exact moments of their points."""

    row: IntArray  # (m,) the point of a one-point item, else -1
    group: IntArray  # (m,) index into the group arrays, else -1
    g_size: FloatArray  # (G,)
    g_mean: FloatArray  # (G, d)
    g_cov: FloatArray  # (G, d, d)


def _inner_split(
    Y: FloatArray, n_parts: int, fraction: float, family: int, max_iter: int,
    rng: np.random.RandomState,
) -> IntArray:  # fmt: skip
    """Part label per point of one chunklet: CEC with at most ``n_parts`` clusters, removal
    threshold ``fraction`` of the chunklet; a chunklet too small for two clusters stays whole
    (spec 7.1 item 20)."""
    m, d = Y.shape
    k0 = min(n_parts, int(m // min_cluster_size(m, d, family, fraction)))
    if k0 < 2:
        return np.zeros(m, dtype=np.int64)
    try:
        result = fit_cec(
            Y,
            np.full(m, -1, dtype=np.int64),
            0,
            n_clusters=k0,
            family=family,
            beta=0.0,
            min_cluster_fraction=fraction,
            n_init=1,
            max_iter=max_iter,
            init="k-means++",
            rng=rng,
        )
    except SingularDataError:
        return np.zeros(m, dtype=np.int64)
    return result.labels


def build_items(
    X: FloatArray,
    chunk: IntArray,
    n_chunklets: int,
    *,
    n_parts: int,
    fraction: float,
    family: int,
    max_iter: int,
    rng: np.random.RandomState,
) -> tuple[Items, IntArray, IntArray]:
    """Items, the initial chunklet of each item, and the item of each point."""
    n = X.shape[0]
    counts = np.bincount(chunk, minlength=n_chunklets)
    part = np.zeros(n, dtype=np.int64)
    order = np.argsort(chunk, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)])
    for c in np.nonzero(counts >= 2)[0]:
        members = order[starts[c] : starts[c + 1]]
        part[members] = _inner_split(X[members], n_parts, fraction, family, max_iter, rng)
    _, item_of_point = np.unique(np.stack([chunk, part], axis=1), axis=0, return_inverse=True)
    item_of_point = item_of_point.reshape(-1).astype(np.int64)
    m = int(item_of_point.max()) + 1
    first = np.full(m, n, dtype=np.int64)
    np.minimum.at(first, item_of_point, np.arange(n, dtype=np.int64))
    rank = np.empty(m, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(m)
    item_of_point = rank[item_of_point]
    first = np.sort(first)
    sizes = np.bincount(item_of_point, minlength=m)
    item_chunk = chunk[first]
    row = np.where(sizes == 1, first, -1).astype(np.int64)
    group = np.full(m, -1, dtype=np.int64)
    grouped = np.nonzero(sizes >= 2)[0]
    group[grouped] = np.arange(grouped.shape[0])
    d = X.shape[1]
    g_mean = np.zeros((grouped.shape[0], d))
    g_cov = np.zeros((grouped.shape[0], d, d))
    if grouped.shape[0]:
        by_item = np.argsort(item_of_point, kind="stable")
        item_starts = np.concatenate([[0], np.cumsum(sizes)])
        for g, t in enumerate(grouped):
            pts = X[by_item[item_starts[t] : item_starts[t + 1]]]
            g_mean[g] = pts.mean(axis=0)
            centred = pts - g_mean[g]
            g_cov[g] = centred.T @ centred / pts.shape[0]
    items = Items(row, group, sizes[grouped].astype(np.float64), g_mean, g_cov)
    return items, item_chunk, item_of_point
