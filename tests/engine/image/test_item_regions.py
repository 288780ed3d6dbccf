"""Item regions: the anchor is the item's own pixel nearest its centroid (brute force), and a
stroke of ANSWER_RADIUS on it covers exactly that item under both items_under rules."""

import math

import numpy as np
import pytest
from skimage.segmentation import slic

from app.engine.image import ANSWER_RADIUS, item_regions, items_under, rasterize_strokes


def _brute_anchor(item_of_pixel: np.ndarray, item: int) -> tuple[int, int]:
    pixels = [(x, y) for y, x in zip(*np.nonzero(item_of_pixel == item), strict=True)]
    cx = sum(x for x, _ in pixels) / len(pixels)
    cy = sum(y for _, y in pixels) / len(pixels)
    return min(pixels, key=lambda p: ((p[0] - cx) ** 2 + (p[1] - cy) ** 2, p[1], p[0]))


def test_a_u_shaped_item_is_anchored_inside_it() -> None:
    item_of_pixel = np.zeros((7, 7), dtype=np.int32)
    item_of_pixel[1:6, 1] = item_of_pixel[1:6, 5] = item_of_pixel[5, 1:6] = 1  # a U
    (region,) = item_regions(item_of_pixel, [1])
    x, y = region.anchor
    assert item_of_pixel[y, x] == 1  # the centroid (3, 3.8) is outside the U
    assert region.anchor == _brute_anchor(item_of_pixel, 1)
    assert region.bbox == (1, 1, 5, 5)
    assert region.radius == pytest.approx(math.sqrt(13 / math.pi))


def test_pixel_items_are_their_own_pixel() -> None:
    item_of_pixel = np.arange(12, dtype=np.int32).reshape(3, 4)
    regions = item_regions(item_of_pixel, [0, 6, 11])
    assert [r.anchor for r in regions] == [(0, 0), (2, 1), (3, 2)]
    assert [r.bbox for r in regions] == [(0, 0, 0, 0), (2, 1, 2, 1), (3, 2, 3, 2)]


@pytest.mark.parametrize("rule", ["half", "any"])
def test_an_answer_stroke_on_the_anchor_covers_exactly_that_item(rule: str) -> None:
    rng = np.random.default_rng(0)
    picture = rng.random((40, 50, 3))
    item_of_pixel = slic(picture, n_segments=30, compactness=1.0, start_label=0).astype(np.int32)
    n_items = int(item_of_pixel.max()) + 1
    items = list(range(n_items))
    for item, region in zip(items, item_regions(item_of_pixel, items), strict=True):
        assert region.anchor == _brute_anchor(item_of_pixel, item)
        stroke = {"points": [list(region.anchor)], "radius": ANSWER_RADIUS}
        mask = rasterize_strokes([stroke], item_of_pixel.shape)
        assert mask.sum() == 1
        assert items_under(mask, item_of_pixel, n_items, rule).tolist() == [item]


def test_an_item_with_no_pixel_is_refused() -> None:
    with pytest.raises(ValueError, match="item 3 covers no pixel"):
        item_regions(np.zeros((2, 2), dtype=np.int32), [3])


def test_many_items_at_once_in_any_order_with_repeats() -> None:
    rng = np.random.default_rng(1)
    item_of_pixel = slic(rng.random((30, 40, 3)), n_segments=20, compactness=1.0, start_label=0)
    n_items = int(item_of_pixel.max()) + 1
    asked = [int(i) for i in rng.integers(0, n_items, size=25)]  # repeats, unsorted
    together = item_regions(item_of_pixel, asked)
    assert together == [item_regions(item_of_pixel, [item])[0] for item in asked]
    for item, region in zip(asked, together, strict=True):
        assert region.anchor == _brute_anchor(item_of_pixel, item)
        rows, cols = np.nonzero(item_of_pixel == item)
        assert region.bbox == (cols.min(), rows.min(), cols.max(), rows.max())
