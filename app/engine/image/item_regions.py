"""Where an item of an image is: the place a question about it is shown, and where an answer
can be drawn so that it covers exactly that item.

An item's region is its bounding box, the radius of a disc of its area, and an anchor: the
item's own pixel nearest the centroid of its pixels. The anchor lies inside the item even when
the item is not convex (a superpixel can wrap around its centroid), so a small stroke on it
(``ANSWER_RADIUS``: one pixel centre) resolves to that item alone under either items_under rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["ANSWER_RADIUS", "ItemRegion", "item_regions"]

# Covers the pixel whose centre the stroke sits on and none of its neighbours (1 pixel away).
ANSWER_RADIUS = 0.75


@dataclass(frozen=True)
class ItemRegion:
    anchor: tuple[int, int]  # (x, y) = (column, row), a pixel of the item
    radius: float  # sqrt(area / pi), pixels
    bbox: tuple[int, int, int, int]  # (x0, y0, x1, y1), inclusive pixel bounds
    answer_radius: float = ANSWER_RADIUS


def item_regions(item_of_pixel: NDArray[np.integer], items: list[int]) -> list[ItemRegion]:
    """The region of each of ``items`` (repeats allowed) in the (H, W) map ``item_of_pixel``.

    One pass over the map picks the asked items' pixels, then a sort groups them by item, so
    asking about many items of a large image costs about as much as asking about one."""
    wanted = np.unique(np.asarray(items, dtype=np.int64))
    flat = item_of_pixel.ravel()
    positions = np.flatnonzero(np.isin(flat, wanted))
    owners = flat[positions]
    order = np.argsort(owners, kind="stable")
    positions, owners = positions[order], owners[order]
    starts = np.searchsorted(owners, wanted, side="left")
    ends = np.searchsorted(owners, wanted, side="right")
    width = item_of_pixel.shape[1]
    found = {}
    for item, start, end in zip(wanted.tolist(), starts.tolist(), ends.tolist(), strict=True):
        if start == end:
            raise ValueError(f"item {item} covers no pixel")
        rows, cols = np.divmod(positions[start:end], width)
        nearest = int(np.argmin((rows - rows.mean()) ** 2 + (cols - cols.mean()) ** 2))
        found[item] = ItemRegion(
            anchor=(int(cols[nearest]), int(rows[nearest])),
            radius=math.sqrt(rows.size / math.pi),
            bbox=(int(cols.min()), int(rows.min()), int(cols.max()), int(rows.max())),
        )
    return [found[int(item)] for item in items]
