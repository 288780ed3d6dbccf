"""Scribble strokes onto pixels, and pixels onto items.

A stroke is ``{"points": [[x, y], ...], "radius": r}`` in image pixel coordinates: x is the
column, y the row, the origin is the centre of the top-left pixel, and floats are allowed. It
covers every pixel whose centre (x = column, y = row) lies within ``radius`` (inclusive) of the
polyline through its points; one point is a disc (so a radius under 0.71 between pixel
centres can cover nothing). What "within" means in floating point is one rule,
``covers_pixel``: the float64 squared distance from the pixel centre to the clamped projection
on a segment is at most ``radius * radius``; it decides every pixel on (or nearly on) a brush
edge, and the tests' brute force calls it for every pixel.

Each segment's capsule meets an image row in one interval of columns (a capsule is convex), so
the rasterization works row by row: per row and segment it computes the columns of the capsule
shrunk and grown by a slack of 1e-9 (1 + radius + image size), far above the rounding of
that arithmetic. Pixels in the shrunk interval are covered; the few between the two, the only ones
whose side of the edge rounding could change, are decided by ``covers_pixel``. The cost grows
with the covered rows plus those edge pixels, not with the covered area.

``items_under`` decides which items a scribble labels. For pixel items these are the covered
pixels. For superpixels the rule ``"half"`` (the default) takes every superpixel with at least half
of its pixels covered; a connected piece of the scribble (8-connectivity) that takes no
superpixel this way, such as a thin stroke, takes the superpixel holding most of its covered
pixels, so every stroke labels something. The rule ``"any"`` takes every superpixel the
scribble touches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage as ndi

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.core.validation import check_choice, check_int

__all__ = [
    "ITEM_RULES",
    "check_strokes",
    "covers_pixel",
    "items_under",
    "items_under_strokes",
    "rasterize_strokes",
]


ITEM_RULES = ("half", "any")

# The rasterizer trusts its row-interval arithmetic only for pixels farther than
# slack = _SLACK * (1 + radius + image size) from the edge. Its rounding, and that of
# covers_pixel, is a few 1e-16 of the coordinates and radii, all below that size; the slack
# moves a squared chord by 2 r slack, against rounding of about 1e-16 r (r + image size), so
# the square roots near a tangent row cannot amplify rounding past it either.
_SLACK = 1e-9


def covers_pixel(
    col: ArrayLike,
    row: ArrayLike,
    x0: ArrayLike,
    y0: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    radius: ArrayLike,
) -> BoolArray:
    """Whether the pixel centre (x = ``col``, y = ``row``) lies within ``radius`` of the segment
    from (x0, y0) to (x1, y1): the edge rule of every stroke (module docstring).

    The float64 squared distance to the projection clamped to the segment, at most
    ``radius * radius``. Element-wise over broadcast arrays; the rasterizer and the tests'
    brute force both decide pixels on a brush edge with exactly this arithmetic.
    """
    c, r_ = np.asarray(col, dtype=np.float64), np.asarray(row, dtype=np.float64)
    ax, ay = np.asarray(x0, dtype=np.float64), np.asarray(y0, dtype=np.float64)
    dx = np.asarray(x1, dtype=np.float64) - ax
    dy = np.asarray(y1, dtype=np.float64) - ay
    length_sq = dx * dx + dy * dy
    # A point (or a segment whose squared length underflows) has dx * dx = dy * dy = 0, so a
    # zero projection: t = 0.
    t = np.clip(((c - ax) * dx + (r_ - ay) * dy) / np.where(length_sq > 0, length_sq, 1.0), 0, 1)
    ex, ey = c - (ax + t * dx), r_ - (ay + t * dy)
    radius = np.asarray(radius, dtype=np.float64)
    return np.asarray(ex * ex + ey * ey <= radius * radius)


def check_strokes(
    strokes: Sequence[Mapping[str, Any]], shape: tuple[int, int]
) -> list[tuple[FloatArray, float]]:
    """Each stroke's (points, radius), or a ValueError saying which stroke is wrong and how:
    what ``rasterize_strokes`` checks, without making the image-sized mask (a slide's is
    gigabytes)."""
    if len(shape) != 2:
        raise ValueError(f"shape must be (height, width), got {shape!r}")
    height = check_int("height", shape[0], 1)
    width = check_int("width", shape[1], 1)
    if isinstance(strokes, Mapping | str) or not isinstance(strokes, Sequence):
        raise ValueError("strokes must be a list of {'points': [[x, y], ...], 'radius': r}")
    return [_check_stroke(index, stroke, height, width) for index, stroke in enumerate(strokes)]


def rasterize_strokes(strokes: Sequence[Mapping[str, Any]], shape: tuple[int, int]) -> BoolArray:
    """The (H, W) boolean mask of pixels covered by any of ``strokes`` (module docstring)."""
    checked = check_strokes(strokes, shape)
    height, width = int(shape[0]), int(shape[1])
    starts, ends, radii = [], [], []
    for points, radius in checked:
        ends_of_segments = points[1:] if len(points) > 1 else points
        starts.append(points[: len(ends_of_segments)])
        ends.append(ends_of_segments)
        radii.append(np.full(len(ends_of_segments), radius))
    mask = np.zeros((height, width), dtype=bool)
    if not starts:
        return mask
    p0, p1, reach = np.concatenate(starts), np.concatenate(ends), np.concatenate(radii)
    rows, lo, hi, edge = _capsule_row_spans(p0, p1, reach, height, width)
    # A +1 at each span's first column and a -1 after its last; the running sum is > 0 on
    # covered pixels.
    size = height * (width + 1)
    marks = np.bincount(rows * (width + 1) + lo, minlength=size)
    marks -= np.bincount(rows * (width + 1) + hi + 1, minlength=size)
    mask[:] = np.cumsum(marks.reshape(height, width + 1), axis=1)[:, :width] > 0
    edge_rows, edge_cols, segment = edge
    hit = covers_pixel(
        edge_cols,
        edge_rows,
        p0[segment, 0],
        p0[segment, 1],
        p1[segment, 0],
        p1[segment, 1],
        reach[segment],
    )
    mask[edge_rows[hit], edge_cols[hit]] = True
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
) -> tuple[IntArray, IntArray, IntArray, tuple[IntArray, IntArray, IntArray]]:
    """Rows and inclusive column spans of pixel centres surely within ``radius`` of each
    segment, and the (row, column, segment) of the pixels ``covers_pixel`` must decide.

    A pixel is sure when it lies in the segment's capsule shrunk by the slack, and undecided
    when it lies in the capsule grown by the slack but not in the shrunk one (module
    docstring); every pixel ``covers_pixel`` accepts lies in the grown capsule.
    """
    slack = _SLACK * (1.0 + radius + max(height, width))
    outer = radius + slack
    sure = radius > slack
    inner = np.where(sure, radius - slack, 0.0)
    d = p1 - p0
    # A segment shorter than half the slack lies within its end discs grown by the slack, and
    # its shrunk capsule contains the shrunk discs: those discs alone bound it, and no strip
    # of a (possibly underflowing) tiny direction is needed.
    strip = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] > (0.5 * slack) ** 2
    top = np.maximum(np.ceil(np.minimum(p0[:, 1], p1[:, 1]) - outer), 0).astype(np.int64)
    bottom = np.minimum(np.floor(np.maximum(p0[:, 1], p1[:, 1]) + outer), height - 1)
    counts = np.maximum(bottom.astype(np.int64) - top + 1, 0)
    segment = np.repeat(np.arange(len(p0)), counts)
    offsets = np.arange(segment.size) - np.repeat(np.cumsum(counts) - counts, counts)
    row = top[segment] + offsets
    y = row.astype(np.float64)
    x0, y0 = p0[segment, 0], p0[segment, 1]
    x1, y1 = p1[segment, 0], p1[segment, 1]
    on_strip = strip[segment]
    (first, last), (sure_first, sure_last) = _capsule_columns(
        x0, y0, x1, y1, y, (outer[segment], inner[segment]), on_strip, width
    )
    sure_first = np.maximum(sure_first, first)
    sure_last = np.minimum(sure_last, last)
    has_sure = sure[segment] & (sure_first <= sure_last)
    # Undecided: [first, left_end] and [right_start, last]; all of [first, last] without a sure
    # span.
    left_end = np.where(has_sure, sure_first - 1, last)
    right_start = np.where(has_sure, sure_last + 1, last + 1)
    starts = np.concatenate([first, right_start])
    lengths = np.maximum(np.concatenate([left_end, last]) - starts + 1, 0)
    owner = np.repeat(np.tile(np.arange(row.size), 2), lengths)
    steps = np.arange(owner.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    edge = (row[owner], np.repeat(starts, lengths) + steps, segment[owner])
    return row[has_sure], sure_first[has_sure], sure_last[has_sure], edge


def _capsule_columns(
    x0: FloatArray,
    y0: FloatArray,
    x1: FloatArray,
    y1: FloatArray,
    y: FloatArray,
    radii: tuple[FloatArray, ...],
    strip: BoolArray,
    width: int,
) -> list[tuple[IntArray, IntArray]]:
    """Per radius r in ``radii``: the first and last column (in 0..width - 1; first > last when
    none) within r of the segment in row ``y``, by interval arithmetic that is right except
    within rounding of the edge; ``strip`` False leaves out the part between the end discs.

    For row y the capsule's columns are the union of the two end discs' chords and the
    strip's interval {x : 0 <= (q - p0).d <= |d|^2, |(q - p0) x d| <= r |d|}, q = (x, y),
    d = p1 - p0; the union is one interval because the capsule is convex. An empty part is
    NaN, which np.fmin and np.fmax pass over.
    """
    rise_sq = [(y - y0) ** 2, (y - y1) ** 2]
    dx, dy = x1 - x0, y1 - y0
    length_sq = dx * dx + dy * dy
    length = np.sqrt(length_sq)
    b = y - y0
    bdx = b * dx
    # Projection: 0 <= a dx + b dy <= |d|^2 with a = x - x0; strip: |a dy - b dx| <= r |d|.
    s_lo, s_hi = _linear_interval(dx, -b * dy, length_sq - b * dy)
    s_lo += x0
    s_hi += x0
    strip = strip & (length_sq > 0)
    columns = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for r in radii:
            r_sq = r * r
            half0, half1 = np.sqrt(r_sq - rise_sq[0]), np.sqrt(r_sq - rise_sq[1])  # NaN: no chord
            lo = np.fmin(x0 - half0, x1 - half1)
            hi = np.fmax(x0 + half0, x1 + half1)
            # a in [(bdx - reach) / dy, (bdx + reach) / dy] in either order. dy == 0 divides
            # by zero: -inf and +inf when |bdx| < reach (the row lies in the strip), two equal
            # infinities when it lies outside, and NaN on a tie, which drops the strip in this
            # row: it is then exactly r from the segment's line, and r is the slack away from
            # the edge (the other radius, or covers_pixel, decides it).
            reach = r * length
            t_a, t_b = (bdx - reach) / dy, (bdx + reach) / dy
            strip_lo = np.maximum(s_lo, np.minimum(t_a, t_b) + x0)
            strip_hi = np.minimum(s_hi, np.maximum(t_a, t_b) + x0)
            on_strip = strip & (strip_lo <= strip_hi)
            lo = np.fmin(lo, np.where(on_strip, strip_lo, np.nan))
            hi = np.fmax(hi, np.where(on_strip, strip_hi, np.nan))
            first = np.maximum(np.ceil(lo), 0)
            last = np.minimum(np.floor(hi), width - 1)
            empty = ~(first <= last)
            columns.append(
                (
                    np.where(empty, 1, first).astype(np.int64),
                    np.where(empty, 0, last).astype(np.int64),
                )
            )
    return columns


def _linear_interval(
    coef: FloatArray, low: FloatArray, high: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """{a : low <= coef * a <= high} as [start, stop]; all reals or empty when coef == 0."""
    safe = np.where(coef == 0, 1.0, coef)
    with np.errstate(over="ignore"):  # a tiny coef: the bounds are +-inf, rightly
        first, second = low / safe, high / safe
    start = np.where(coef > 0, first, second)
    stop = np.where(coef > 0, second, first)
    holds = (low <= 0) & (high >= 0)
    start = np.where(coef == 0, np.where(holds, -np.inf, np.inf), start)
    stop = np.where(coef == 0, np.where(holds, np.inf, -np.inf), stop)
    return start, stop


def items_under(
    mask: ArrayLike,
    item_of_pixel: ArrayLike,
    n_items: int,
    rule: str = "half",
    sizes: ArrayLike | None = None,
) -> IntArray:
    """Sorted ids of the items a scribble ``mask`` labels (the rule is in the module docstring).

    Pixel items (each item one pixel) get exactly the covered pixels under either rule.
    ``sizes``: every item's pixel count, when ``mask`` and ``item_of_pixel`` are a region of
    the image (a slide's), not all of it.
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
    if sizes is None:
        sizes = np.bincount(items.ravel(), minlength=n_items)
    sizes = np.asarray(sizes)
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


def items_under_strokes(
    strokes: Sequence[Mapping[str, Any]],
    shape: tuple[int, int],
    read_items: Callable[[tuple[int, int], tuple[int, int]], NDArray[np.integer]],
    n_items: int,
    sizes: ArrayLike,
    rule: str = "half",
) -> IntArray:
    """``items_under(rasterize_strokes(strokes, shape), ...)`` for an image whose map of items
    is read by region (a slide's): only the strokes' bounding box is read and rasterized."""
    height, width = shape
    check_strokes(strokes, shape)
    reach = max(math.ceil(float(s["radius"])) for s in strokes)
    xs = [p[0] for s in strokes for p in s["points"]]
    ys = [p[1] for s in strokes for p in s["points"]]
    x0 = max(0, math.floor(min(xs)) - reach)
    y0 = max(0, math.floor(min(ys)) - reach)
    x1 = min(width - 1, math.ceil(max(xs)) + reach)
    y1 = min(height - 1, math.ceil(max(ys)) + reach)
    shifted = [{**s, "points": [[p[0] - x0, p[1] - y0] for p in s["points"]]} for s in strokes]
    region = read_items((y0, y1 + 1), (x0, x1 + 1))
    mask = rasterize_strokes(shifted, (y1 - y0 + 1, x1 - x0 + 1))
    return items_under(mask, region, n_items, rule, sizes)
