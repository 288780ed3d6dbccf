"""Scribble strokes onto pixels, and pixels onto items.

A stroke is ``{"points": [[x, y], ...], "radius": r}`` in image pixel coordinates: x is the
column, y the row, the origin is the centre of the top-left pixel, and floats are allowed. It
covers every pixel whose centre (x = column, y = row) lies within ``radius`` (inclusive) of the
polyline through its points; one point is a disc (so a radius under 0.71 between pixel
centres can cover nothing). Each segment's capsule meets an image row in
one interval of columns (a capsule is convex), so the rasterization works row by row with no
per-pixel distance computations: its cost grows with the covered rows, not the covered area.

``items_under`` decides which items a scribble labels. For pixel items these are the covered
pixels. For superpixels the rule ``"half"`` (the default) takes every superpixel with at least half
of its pixels covered; a connected piece of the scribble (8-connectivity) that takes no
superpixel this way, such as a thin stroke, takes the superpixel holding most of its covered
pixels, so every stroke labels something. The rule ``"any"`` takes every superpixel the
scribble touches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage as ndi

from app.engine.core.validation import check_choice, check_int

__all__ = ["ITEM_RULES", "items_under", "rasterize_strokes"]

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

ITEM_RULES = ("half", "any")


def rasterize_strokes(strokes: Sequence[Mapping[str, Any]], shape: tuple[int, int]) -> BoolArray:
    """The (H, W) boolean mask of pixels covered by any of ``strokes`` (module docstring)."""
    if len(shape) != 2:
        raise ValueError(f"shape must be (height, width), got {shape!r}")
    height = check_int("height", shape[0], 1)
    width = check_int("width", shape[1], 1)
    if isinstance(strokes, Mapping | str) or not isinstance(strokes, Sequence):
        raise ValueError("strokes must be a list of {'points': [[x, y], ...], 'radius': r}")
    starts, ends, radii = [], [], []
    for index, stroke in enumerate(strokes):
        points, radius = _check_stroke(index, stroke, height, width)
        ends_of_segments = points[1:] if len(points) > 1 else points
        starts.append(points[: len(ends_of_segments)])
        ends.append(ends_of_segments)
        radii.append(np.full(len(ends_of_segments), radius))
    mask = np.zeros((height, width), dtype=bool)
    if not starts:
        return mask
    rows, lo, hi = _capsule_row_spans(
        np.concatenate(starts), np.concatenate(ends), np.concatenate(radii), height, width
    )
    # A +1 at each span's first column and a -1 after its last; the running sum is > 0 on
    # covered pixels.
    size = height * (width + 1)
    marks = np.bincount(rows * (width + 1) + lo, minlength=size)
    marks -= np.bincount(rows * (width + 1) + hi + 1, minlength=size)
    mask[:] = np.cumsum(marks.reshape(height, width + 1), axis=1)[:, :width] > 0
    return mask


def _check_stroke(index: int, stroke: object, height: int, width: int) -> tuple[FloatArray, float]:
    name = f"stroke {index}"
    if not isinstance(stroke, Mapping) or "points" not in stroke or "radius" not in stroke:
        raise ValueError(f"{name} must be a mapping with 'points' and 'radius', got {stroke!r}")
    radius = stroke["radius"]
    if isinstance(radius, bool) or not isinstance(radius, int | float):
        raise ValueError(f"{name}: radius must be a number, got {radius!r}")
    if not math.isfinite(radius) or radius <= 0:
        raise ValueError(f"{name}: radius must be finite and positive, got {radius!r}")
    try:
        points = np.asarray(stroke["points"], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: points must be a list of [x, y] numbers") from exc
    if points.size == 0:
        raise ValueError(f"{name} has no points")
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"{name}: points must be a list of [x, y] pairs, got shape {points.shape}")
    finite = np.isfinite(points).all(axis=1)
    if not finite.all():
        first = int(np.argmin(finite))
        x, y = (float(v) for v in points[first])
        raise ValueError(f"{name}: point {first} (x={x!r}, y={y!r}) is not finite")
    outside = (points[:, 0] < 0) | (points[:, 0] > width - 1)
    outside |= (points[:, 1] < 0) | (points[:, 1] > height - 1)
    if outside.any():
        first = int(np.argmax(outside))
        x, y = (float(v) for v in points[first])
        raise ValueError(
            f"{name}: point {first} (x={x!r}, y={y!r}) is outside the {width} x {height} image; "
            f"x must be in [0, {width - 1}] and y in [0, {height - 1}]"
        )
    return points, float(radius)


def _capsule_row_spans(
    p0: FloatArray, p1: FloatArray, radius: FloatArray, height: int, width: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Rows and inclusive column spans of pixel centres within ``radius`` of each segment.

    For row y the capsule's columns are the union of the two end discs' chords and the
    strip's interval {x : 0 <= (q - p0).d <= |d|^2, |(q - p0) x d| <= r |d|}, q = (x, y),
    d = p1 - p0; the union is one interval because the capsule is convex.
    """
    top = np.maximum(np.ceil(np.minimum(p0[:, 1], p1[:, 1]) - radius), 0).astype(np.int64)
    bottom = np.minimum(np.floor(np.maximum(p0[:, 1], p1[:, 1]) + radius), height - 1)
    counts = np.maximum(bottom.astype(np.int64) - top + 1, 0)
    segment = np.repeat(np.arange(len(p0)), counts)
    offsets = np.arange(segment.size) - np.repeat(np.cumsum(counts) - counts, counts)
    y = (top[segment] + offsets).astype(np.float64)
    x0, y0 = p0[segment, 0], p0[segment, 1]
    x1, y1 = p1[segment, 0], p1[segment, 1]
    r = radius[segment]
    lo = np.full(y.size, np.inf)
    hi = np.full(y.size, -np.inf)
    for cx, cy in ((x0, y0), (x1, y1)):
        chord_sq = r * r - (y - cy) ** 2
        half = np.sqrt(np.maximum(chord_sq, 0.0))
        inside = chord_sq >= 0
        lo = np.where(inside, np.minimum(lo, cx - half), lo)
        hi = np.where(inside, np.maximum(hi, cx + half), hi)
    dx, dy = x1 - x0, y1 - y0
    length_sq = dx * dx + dy * dy
    b = y - y0
    # Projection: 0 <= a dx + b dy <= |d|^2 with a = x - x0; strip: |a dy - b dx| <= r |d|.
    s_lo, s_hi = _linear_interval(dx, -b * dy, length_sq - b * dy)
    t_lo, t_hi = _linear_interval(
        dy, b * dx - r * np.sqrt(length_sq), b * dx + r * np.sqrt(length_sq)
    )
    strip_lo = np.maximum(s_lo, t_lo) + x0
    strip_hi = np.minimum(s_hi, t_hi) + x0
    strip = (length_sq > 0) & (strip_lo <= strip_hi)
    lo = np.where(strip, np.minimum(lo, strip_lo), lo)
    hi = np.where(strip, np.maximum(hi, strip_hi), hi)
    first = np.maximum(np.ceil(lo), 0)
    last = np.minimum(np.floor(hi), width - 1)
    keep = first <= last
    return (
        (top[segment] + offsets)[keep],
        first[keep].astype(np.int64),
        last[keep].astype(np.int64),
    )


def _linear_interval(
    coef: FloatArray, low: FloatArray, high: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """{a : low <= coef * a <= high} as [start, stop]; all reals or empty when coef == 0."""
    safe = np.where(coef == 0, 1.0, coef)
    first, second = low / safe, high / safe
    start = np.where(coef > 0, first, second)
    stop = np.where(coef > 0, second, first)
    holds = (low <= 0) & (high >= 0)
    start = np.where(coef == 0, np.where(holds, -np.inf, np.inf), start)
    stop = np.where(coef == 0, np.where(holds, np.inf, -np.inf), stop)
    return start, stop


def items_under(
    mask: ArrayLike, item_of_pixel: ArrayLike, n_items: int, rule: str = "half"
) -> IntArray:
    """Sorted ids of the items a scribble ``mask`` labels (the rule is in the module docstring).

    Pixel items (each item one pixel) get exactly the covered pixels under either rule.
    """
    covered = np.asarray(mask)
    items = np.asarray(item_of_pixel)
    n_items = check_int("n_items", n_items, 1)
    check_choice("rule", rule, list(ITEM_RULES))
    if covered.dtype != np.bool_:
        raise ValueError(f"mask must be a boolean array, got dtype {covered.dtype}")
    if items.ndim != 2 or items.shape != covered.shape:
        raise ValueError(
            f"mask and item_of_pixel must be H x W arrays of one shape, got {covered.shape} and "
            f"{items.shape}"
        )
    if items.size == 0 or items.dtype.kind not in "iu" or items.min() < 0 or items.max() >= n_items:
        raise ValueError(f"item_of_pixel must hold item ids in 0..{n_items - 1}")
    hit = items[covered].astype(np.int64)
    touched = np.bincount(hit, minlength=n_items)
    if rule == "any":
        return np.flatnonzero(touched)
    sizes = np.bincount(items.ravel(), minlength=n_items)
    chosen = 2 * touched >= np.maximum(sizes, 1)
    pieces, n_pieces = ndi.label(covered, structure=np.ones((3, 3), dtype=bool))
    piece = pieces[covered].astype(np.int64) - 1
    pieces_with_a_choice = np.zeros(n_pieces, dtype=bool)
    pieces_with_a_choice[piece[chosen[hit]]] = True
    orphan = ~pieces_with_a_choice[piece]
    if np.any(orphan):
        # Per orphan piece, the item with most of its covered pixels (lowest id on a tie).
        pairs = piece[orphan] * n_items + hit[orphan]
        keys, counts = np.unique(pairs, return_counts=True)
        order = np.lexsort((keys % n_items, -counts, keys // n_items))
        owners = keys // n_items
        best = order[np.r_[True, owners[order][1:] != owners[order][:-1]]]
        chosen[keys[best] % n_items] = True
    return np.flatnonzero(chosen)
