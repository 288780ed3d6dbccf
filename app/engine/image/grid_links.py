"""Continuity links on an image grid for PPC (specs/ppc.md Sec. 5.7, DESIGN.md Sec. 9).

Items are numbered row-major: item ``r * width + c`` is the cell in row r, column c. Every
unordered pair of neighbours appears once, so with PPC's ordered-pair convention a uniform
weight ``w`` gives each neighbour pair the factor exp(2 w [z_i = z_j]), as in eq. 5.3.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.validation import check_choice, check_int

_OFFSETS = {4: ((0, 1), (1, 0)), 8: ((0, 1), (1, 0), (1, 1), (1, -1))}


def grid_neighbour_pairs(height: int, width: int, connectivity: int = 4) -> IntArray:
    """(m, 2) row-major index pairs of 4- or 8-neighbours, each unordered pair once."""
    height = check_int("height", height, 1)
    width = check_int("width", width, 1)
    if connectivity not in _OFFSETS:
        check_choice("connectivity", str(connectivity), ["4", "8"])
    index = np.arange(height * width, dtype=np.int64).reshape(height, width)
    parts = []
    for dr, dc in _OFFSETS[connectivity]:
        rows = slice(0, height - dr)
        src_cols = slice(max(0, -dc), width - max(0, dc))
        dst_cols = slice(max(0, dc), width - max(0, -dc))
        src = index[rows, src_cols]
        dst = index[dr:, dst_cols]
        parts.append(np.stack([src.ravel(), dst.ravel()], axis=1))
    return np.concatenate(parts, axis=0)


def grid_links(
    height: int, width: int, weight: float, connectivity: int = 4
) -> tuple[IntArray, FloatArray]:
    """``(pairs, weights)`` for ``PPC.fit(X, pairs=..., weights=...)``: neighbour links with one
    uniform weight.

    ``weight`` is the paper's W (per ordered pair); for a neighbour disagreement rate q use
    ``confidence_to_weight(1 - q)`` = (1/2) log((1 - q) / q) (eq. 5.2).
    """
    if not np.isfinite(weight) and weight != np.inf:
        raise ValueError(f"weight must be a number or +inf, got {weight!r}")
    pairs = grid_neighbour_pairs(height, width, connectivity)
    return pairs, np.full(pairs.shape[0], float(weight))


def neighbour_disagreement(labels: ArrayLike, connectivity: int = 4) -> float:
    """q~: the fraction of neighbour pairs with different labels in a 2-D label grid (Sec. 1.2)."""
    grid = np.asarray(labels)
    if grid.ndim != 2:
        raise ValueError(f"labels must be a 2-D grid, got shape {grid.shape}")
    pairs = grid_neighbour_pairs(grid.shape[0], grid.shape[1], connectivity)
    flat = grid.ravel()
    return float(np.mean(flat[pairs[:, 0]] != flat[pairs[:, 1]]))
