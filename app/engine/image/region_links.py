"""Continuity links between regions (superpixels) of an image for PPC.

A superpixel segmentation (e.g. ``skimage.segmentation.slic``) turns an image of millions of
pixels into thousands of regions; PPC then clusters regions, linked when they touch. Regions
that share a long boundary are more likely to belong together than ones that touch at a
corner, so each link's weight is proportional to the length of the shared boundary, scaled
so that the mean link has the given weight.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from app.engine.arrays import FloatArray, IntArray


def region_index(segments: ArrayLike) -> tuple[IntArray, int]:
    """Region number (0..R-1, in the sorted order of the labels) of every pixel, and R."""
    grid = np.asarray(segments)
    if grid.ndim != 2 or grid.size == 0:
        raise ValueError(f"segments must be a non-empty 2-D label grid, got shape {grid.shape}")
    if grid.dtype.kind not in "iu":
        raise ValueError(f"segments must hold integer region labels, got dtype {grid.dtype}")
    values, index = np.unique(grid, return_inverse=True)
    return index.reshape(grid.shape).astype(np.int64), int(values.shape[0])


def region_adjacency(segments: ArrayLike) -> tuple[IntArray, IntArray]:
    """``(pairs, boundary)``: every unordered pair of 4-adjacent regions once (numbered as
    ``region_index``), and the number of pixel edges on their shared boundary."""
    index, count = region_index(segments)
    a = np.concatenate([index[:, :-1].ravel(), index[:-1, :].ravel()])
    b = np.concatenate([index[:, 1:].ravel(), index[1:, :].ravel()])
    cross = a != b
    lo = np.minimum(a[cross], b[cross])
    hi = np.maximum(a[cross], b[cross])
    keys, boundary = np.unique(lo * count + hi, return_counts=True)
    pairs = np.stack([keys // count, keys % count], axis=1).astype(np.int64)
    return pairs, boundary.astype(np.int64)


def region_links(segments: ArrayLike, weight: float) -> tuple[IntArray, FloatArray]:
    """``(pairs, weights)`` for ``PPC.fit`` on regions: adjacent regions linked with weight
    ``weight * boundary / mean boundary`` (the paper's W per ordered pair, as ``grid_links``),
    or all hard (+inf). For pixel items (one region per pixel) every boundary is 1 and the
    links are ``grid_links``'s pairs with the same weights."""
    if isinstance(weight, bool) or not isinstance(weight, int | float | np.floating):
        raise ValueError(f"weight must be a number or +inf, got {weight!r}")
    if not np.isfinite(weight) and weight != np.inf:
        raise ValueError(f"weight must be a number or +inf, got {weight!r}")
    pairs, boundary = region_adjacency(segments)
    if pairs.shape[0] == 0:
        return pairs, np.empty(0)
    if weight == np.inf:
        return pairs, np.full(pairs.shape[0], np.inf)
    return pairs, float(weight) * boundary / boundary.mean()


def region_means(values: ArrayLike, segments: ArrayLike) -> FloatArray:
    """(R, d) mean of per-pixel ``values`` (h, w, d) or (h * w, d) over each region."""
    index, count = region_index(segments)
    flat = np.asarray(values, dtype=np.float64).reshape(index.size, -1)
    sizes = np.bincount(index.ravel(), minlength=count).astype(np.float64)
    out = np.empty((count, flat.shape[1]))
    for j in range(flat.shape[1]):
        out[:, j] = np.bincount(index.ravel(), weights=flat[:, j], minlength=count) / sizes
    return out
