"""Continuity links between superpixels for PPC: the superpixel analogue of ``grid_links``.

Two items are adjacent when a pixel of one and a pixel of the other are 4-neighbours; the length
of their shared border is the number of such pixel pairs. ``superpixel_links`` weights each link
by ``weight * border / mean(border)``, so the average link carries the grid's per-pair weight W
(specs/ppc.md eq. 5.2) and a long common border couples two superpixels more than a corner does.
Pairs come as ``(i, j)`` with ``i < j``, each unordered pair once, sorted, as in ``grid_links``.
For pixel items (``item_of_pixel`` the identity raster) every border is 1 and the links are
exactly ``grid_links(H, W, weight)``'s pairs (in another order) with the same weights.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

__all__ = ["region_adjacency", "superpixel_links"]


def region_adjacency(item_of_pixel: ArrayLike) -> tuple[IntArray, IntArray]:
    """``(pairs, border)``: (m, 2) adjacent item pairs, i < j, sorted; (m,) shared-border lengths
    in pixel pairs (4-connectivity)."""
    items = np.asarray(item_of_pixel)
    if items.ndim != 2 or items.size == 0:
        raise ValueError(f"item_of_pixel must be a non-empty H x W array, got shape {items.shape}")
    if items.dtype.kind not in "iu" or items.min() < 0:
        raise ValueError("item_of_pixel must hold non-negative integer item ids")
    items = items.astype(np.int64)
    first = np.concatenate([items[:, :-1].ravel(), items[:-1, :].ravel()])
    second = np.concatenate([items[:, 1:].ravel(), items[1:, :].ravel()])
    differ = first != second
    low = np.minimum(first[differ], second[differ])
    high = np.maximum(first[differ], second[differ])
    n_items = int(items.max()) + 1
    keys, border = np.unique(low * n_items + high, return_counts=True)
    pairs = np.stack([keys // n_items, keys % n_items], axis=1)
    return pairs, border.astype(np.int64)


def superpixel_links(item_of_pixel: ArrayLike, weight: float) -> tuple[IntArray, FloatArray]:
    """``(pairs, weights)`` for ``PPC.fit``: adjacent items, weight scaled by border length.

    ``weight`` is the paper's W for an average link (a number, or +inf for hard links).
    """
    if isinstance(weight, bool) or not isinstance(weight, int | float | np.floating):
        raise ValueError(f"weight must be a number or +inf, got {weight!r}")
    if not np.isfinite(weight) and weight != np.inf:
        raise ValueError(f"weight must be a number or +inf, got {weight!r}")
    pairs, border = region_adjacency(item_of_pixel)
    if pairs.shape[0] == 0:
        return pairs, np.empty(0)
    if weight == np.inf:
        return pairs, np.full(pairs.shape[0], np.inf)
    return pairs, float(weight) * border / border.mean()
