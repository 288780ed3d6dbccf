"""Side scores from a boundary drawn in a 2-D view.

A polyline: items to the left of the drawn direction get positive scores (the first label),
items to the right negative ones (the second label). A closed polygon (last point equal to the
first): inside is positive. The magnitude is the distance to the boundary in view coordinates.
"""

from itertools import pairwise

import numpy as np
from numpy.typing import NDArray


def is_closed(points: NDArray[np.float64]) -> bool:
    return len(points) >= 4 and bool(np.allclose(points[0], points[-1]))


def side_scores(coords: NDArray[np.floating], points: NDArray[np.float64]) -> NDArray[np.float64]:
    xy = np.asarray(coords, dtype=np.float64)
    starts, ends = points[:-1], points[1:]
    distance, nearest = _nearest_segment(xy, starts, ends)
    if is_closed(points):
        sign = np.where(_inside_polygon(xy, points), 1.0, -1.0)
    else:
        seg = ends[nearest] - starts[nearest]
        rel = xy - starts[nearest]
        cross = seg[:, 0] * rel[:, 1] - seg[:, 1] * rel[:, 0]
        sign = np.where(cross >= 0, 1.0, -1.0)
    return sign * distance


def _nearest_segment(
    xy: NDArray[np.float64], starts: NDArray[np.float64], ends: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    best = np.full(len(xy), np.inf)
    nearest = np.zeros(len(xy), dtype=np.int64)
    for s, (a, b) in enumerate(zip(starts, ends, strict=True)):
        ab = b - a
        length2 = float(ab @ ab)
        t = np.zeros(len(xy)) if length2 == 0 else np.clip((xy - a) @ ab / length2, 0.0, 1.0)
        closest = a + t[:, None] * ab
        d = np.hypot(xy[:, 0] - closest[:, 0], xy[:, 1] - closest[:, 1])
        better = d < best
        best[better] = d[better]
        nearest[better] = s
    return best, nearest


def _inside_polygon(xy: NDArray[np.float64], polygon: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Even-odd rule by ray casting to +x."""
    inside = np.zeros(len(xy), dtype=bool)
    x, y = xy[:, 0], xy[:, 1]
    for (x1, y1), (x2, y2) in pairwise(polygon.tolist()):
        crosses = (y1 > y) != (y2 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (x < x_at)
    return inside
