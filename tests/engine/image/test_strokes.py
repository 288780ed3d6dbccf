"""Scribble rasterization against a per-pixel brute force, and the stroke-to-item rule against
hand-made cases and an explicit loop over connected pieces."""

from __future__ import annotations

import itertools
import re
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import ndimage as ndi

from app.engine.image import items_under, rasterize_strokes
from app.engine.image.strokes import check_strokes, covers_pixel

BoolArray = NDArray[np.bool_]


def brute_force(strokes: list[dict[str, Any]], shape: tuple[int, int]) -> BoolArray:
    """Every pixel against every segment, decided by the shared edge rule ``covers_pixel``
    (squared distance to the clamped projection <= r^2), so pixels exactly on an edge are
    decided by the same float arithmetic as in the rasterizer."""
    mask = np.zeros(shape, dtype=bool)
    for stroke in strokes:
        points = [(float(x), float(y)) for x, y in stroke["points"]]
        segments = list(itertools.pairwise(points)) or [(points[0], points[0])]
        (x0, y0), (x1, y1) = np.array(segments).transpose(1, 2, 0)  # each (n_segments,)
        for row in range(shape[0]):
            for col in range(shape[1]):
                if covers_pixel(col, row, x0, y0, x1, y1, stroke["radius"]).any():
                    mask[row, col] = True
    return mask


def random_strokes(rng: np.random.Generator, height: int, width: int) -> list[dict[str, Any]]:
    strokes = []
    for _ in range(rng.integers(1, 4)):
        n = int(rng.integers(1, 6))
        points = np.c_[rng.uniform(0, width - 1, n), rng.uniform(0, height - 1, n)]
        if rng.random() < 0.3:
            points = np.round(points)  # integer points: exact ties on the boundary
        radius = float(rng.choice([rng.uniform(0.2, 5.0), 0.5, 1.0, 2.0, 3.0]))
        strokes.append({"points": points.tolist(), "radius": radius})
    return strokes


def test_rasterization_equals_brute_force_on_random_strokes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(150):
        height, width = (int(v) for v in rng.integers(1, 16, 2))
        strokes = random_strokes(rng, height, width)
        np.testing.assert_array_equal(
            rasterize_strokes(strokes, (height, width)), brute_force(strokes, (height, width))
        )


coordinates = st.floats(0, 1, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    height=st.integers(1, 12),
    width=st.integers(1, 12),
    unit_points=st.lists(st.tuples(coordinates, coordinates), min_size=1, max_size=5),
    radius=st.floats(0.05, 8.0),
)
@example(height=2, width=2, unit_points=[(1e-300, 0.0)], radius=1.0)  # pixel [1, 0] on the edge
def test_rasterization_equals_brute_force_hypothesis(
    height: int, width: int, unit_points: list[tuple[float, float]], radius: float
) -> None:
    points = [[x * (width - 1), y * (height - 1)] for x, y in unit_points]
    strokes = [{"points": points, "radius": radius}]
    np.testing.assert_array_equal(
        rasterize_strokes(strokes, (height, width)), brute_force(strokes, (height, width))
    )


def test_a_pixel_exactly_on_the_brush_edge_is_decided_by_the_shared_rule() -> None:
    # Regression (found by hypothesis): pixel [1, 0] is 1.0 from the point in float64 (the
    # 1e-300 squared underflows), so it is covered; the row arithmetic alone left it out.
    strokes = [{"points": [[1e-300, 0.0]], "radius": 1.0}]
    assert covers_pixel(0, 1, 1e-300, 0.0, 1e-300, 0.0, 1.0)
    expected = np.array([[True, True], [True, False]])
    np.testing.assert_array_equal(rasterize_strokes(strokes, (2, 2)), expected)
    np.testing.assert_array_equal(brute_force(strokes, (2, 2)), expected)


def test_pixels_on_the_edges_of_aligned_strokes_follow_the_shared_rule() -> None:
    # Integer points and radii put whole rows of pixel centres exactly on a brush edge.
    strokes = [
        {"points": [[2, 3], [20, 3]], "radius": 2.0},
        {"points": [[5, 1], [5, 9], [17, 9]], "radius": 3.0},
        {"points": [[3, 3], [9, 6]], "radius": float(np.hypot(1, 2))},
    ]
    mask = rasterize_strokes(strokes, (12, 24))
    np.testing.assert_array_equal(mask, brute_force(strokes, (12, 24)))
    assert mask[1, 2:21].all() and mask[5, 2:21].all() and not mask[0, 8:21].any()


def test_a_single_point_is_a_disc() -> None:
    plus = rasterize_strokes([{"points": [[2, 2]], "radius": 1}], (5, 5))
    expected = np.zeros((5, 5), dtype=bool)
    expected[2, 1:4] = expected[1:4, 2] = True
    np.testing.assert_array_equal(plus, expected)
    square = rasterize_strokes([{"points": [[2, 2]], "radius": 1.5}], (5, 5))
    assert square.sum() == 9 and square[1:4, 1:4].all()


def test_x_is_the_column_and_y_the_row() -> None:
    mask = rasterize_strokes([{"points": [[1, 0], [4, 0]], "radius": 0.5}], (3, 6))
    assert mask[0, 1:5].all() and mask.sum() == 4


def test_a_thin_stroke_between_pixel_centres_covers_nothing() -> None:
    mask = rasterize_strokes([{"points": [[0.5, 0.5]], "radius": 0.5}], (2, 2))
    assert not mask.any()  # every centre is 0.707 away


def test_strokes_may_end_on_the_border_and_the_union_is_taken() -> None:
    strokes = [
        {"points": [[0, 0], [9, 0]], "radius": 1},
        {"points": [[9, 4], [9, 4]], "radius": 2},
    ]
    mask = rasterize_strokes(strokes, (5, 10))
    np.testing.assert_array_equal(mask, brute_force(strokes, (5, 10)))
    assert mask[0].all() and mask[4, 7:].all()


def test_long_wide_strokes_on_a_large_image_match_brute_force_on_a_crop() -> None:
    xs = np.linspace(3, 1020, 400)
    points = np.c_[xs, 500 + 400 * np.sin(xs / 90)]
    mask = rasterize_strokes([{"points": points.tolist(), "radius": 60.0}], (1024, 1024))
    # The brute force on a 16 x 16 crop around the band's left edge in row 400.
    left = int(np.argmax(mask[400])) - 8
    shifted = [{"points": (points - [left, 392]).tolist(), "radius": 60.0}]
    crop = mask[392:408, left : left + 16]
    assert 0 < crop.sum() < crop.size
    np.testing.assert_array_equal(crop, brute_force(shifted, (16, 16)))


def test_no_strokes_cover_nothing() -> None:
    assert not rasterize_strokes([], (3, 4)).any()


@pytest.mark.parametrize(
    ("strokes", "message"),
    [
        ({"points": [[0, 0]], "radius": 1}, "strokes must be a list of"),
        ([{"points": [[0, 0]], "radius": 1}, "line"], "stroke 1 must be a mapping with 'points'"),
        ([{"points": [[0, 0]]}], "stroke 0 must be a mapping with 'points' and 'radius'"),
        (
            [{"points": [[0, 0]], "radius": 0}],
            "stroke 0: radius must be finite and positive, got 0",
        ),
        ([{"points": [[0, 0]], "radius": -2.0}], "stroke 0: radius must be finite and positive"),
        ([{"points": [[0, 0]], "radius": float("nan")}], "radius must be finite and positive"),
        ([{"points": [[0, 0]], "radius": float("inf")}], "radius must be finite and positive"),
        ([{"points": [[0, 0]], "radius": "3"}], "stroke 0: radius must be a number, got '3'"),
        ([{"points": [[0, 0]], "radius": True}], "stroke 0: radius must be a number, got True"),
        ([{"points": [], "radius": 1}], "stroke 0 has no points"),
        ([{"points": [1, 2], "radius": 1}], "stroke 0: points must be a list of [x, y] pairs"),
        ([{"points": [[1, 2, 3]], "radius": 1}], "points must be a list of [x, y] pairs"),
        (
            [{"points": [["a", 2]], "radius": 1}],
            "stroke 0: points must be a list of [x, y] numbers",
        ),
        (
            [{"points": [[0, 0]], "radius": 1}, {"points": [[1, 1], [10, 2]], "radius": 1}],
            "stroke 1: point 1 (x=10.0, y=2.0) is outside the 10 x 5 image; x must be in [0, 9] "
            "and y in [0, 4]",
        ),
        ([{"points": [[-0.01, 2]], "radius": 1}], "stroke 0: point 0 (x=-0.01, y=2.0) is outside"),
        ([{"points": [[3, 4.5]], "radius": 1}], "stroke 0: point 0 (x=3.0, y=4.5) is outside"),
        ([{"points": [[3, -1]], "radius": 1}], "point 0 (x=3.0, y=-1.0) is outside"),
        (
            [{"points": [[float("nan"), 1]], "radius": 1}],
            "stroke 0: point 0 (x=nan, y=1.0) is not finite",
        ),
    ],
)
def test_stroke_errors_name_the_stroke(strokes: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        rasterize_strokes(strokes, (5, 10))
    with pytest.raises(ValueError, match=re.escape(message)):
        check_strokes(strokes, (5, 10))


def test_checking_strokes_on_a_slide_allocates_nothing_image_sized() -> None:
    """A scribble on a 50k x 50k slide is checked when it is posted: rasterizing it over the
    whole slide took 17 bytes a pixel (7 GiB at 20k x 20k)."""
    strokes = [{"points": [[100.0, 200.0], [49_000.0, 49_999.0]], "radius": 8.0}]
    tracemalloc.start()
    try:
        checked = check_strokes(strokes, (50_000, 50_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    np.testing.assert_array_equal(checked[0][0], [[100.0, 200.0], [49_000.0, 49_999.0]])
    assert checked[0][1] == 8.0


# --- items under a scribble --------------------------------------------------------------------


def blocks(height: int, width: int, size: int) -> NDArray[np.int32]:
    """Square superpixels of size x size, numbered in raster order."""
    rows, cols = np.mgrid[:height, :width]
    per_row = -(-width // size)
    return ((rows // size) * per_row + cols // size).astype(np.int32)


def test_pixel_items_are_the_covered_pixels() -> None:
    mask = rasterize_strokes([{"points": [[1, 1], [6, 3]], "radius": 1.2}], (5, 8))
    identity = np.arange(40, dtype=np.int32).reshape(5, 8)
    for rule in ("half", "any"):
        np.testing.assert_array_equal(items_under(mask, identity, 40, rule), np.flatnonzero(mask))


def test_superpixels_at_least_half_covered_are_labeled() -> None:
    items = blocks(4, 8, 4)  # two 4 x 4 superpixels: 0 left, 1 right
    mask = np.zeros((4, 8), dtype=bool)
    mask[:2, :4] = True  # exactly half of item 0
    mask[0, 4:7] = True  # 3 of 16 pixels of item 1, in the same connected piece
    np.testing.assert_array_equal(items_under(mask, items, 2), [0])
    np.testing.assert_array_equal(items_under(mask, items, 2, rule="any"), [0, 1])


def test_a_thin_stroke_labels_the_superpixel_holding_most_of_it() -> None:
    items = blocks(6, 12, 6)  # items 0 and 1
    mask = rasterize_strokes([{"points": [[3, 2], [8, 2]], "radius": 0.5}], (6, 12))
    assert mask.sum() == 6  # columns 3..8 of row 2: 3 in item 0, 3 in item 1: a tie
    np.testing.assert_array_equal(items_under(mask, items, 2), [0])  # the lower id wins the tie
    longer = rasterize_strokes([{"points": [[3, 2], [9, 2]], "radius": 0.5}], (6, 12))
    np.testing.assert_array_equal(items_under(longer, items, 2), [1])


def test_every_connected_piece_labels_something() -> None:
    items = blocks(8, 16, 4)  # 2 rows of 4 superpixels: 0..3 and 4..7
    mask = np.zeros((8, 16), dtype=bool)
    mask[1, 1] = True  # a dot in item 0
    mask[6, 9:11] = True  # a dash in item 6
    mask[4:8, 12:16] = True  # the whole of item 7, and ...
    mask[3, 15] = True  # ... a pixel of item 3 in the same piece: not labeled
    np.testing.assert_array_equal(items_under(mask, items, 8), [0, 6, 7])


def half_rule_by_loops(mask: BoolArray, items: NDArray[np.int32], n_items: int) -> list[int]:
    chosen = set()
    sizes = np.bincount(items.ravel(), minlength=n_items)
    for k in range(n_items):
        if 2 * np.sum(mask & (items == k)) >= max(sizes[k], 1) and np.any(mask & (items == k)):
            chosen.add(k)
    pieces, n_pieces = ndi.label(mask, structure=np.ones((3, 3)))
    for p in range(1, n_pieces + 1):
        inside = items[pieces == p]
        if not chosen & set(inside.tolist()):
            counts = np.bincount(inside, minlength=n_items)
            chosen.add(int(np.argmax(counts)))  # argmax: the lowest id among the largest
    return sorted(chosen)


def test_half_rule_equals_a_loop_over_pieces_on_random_superpixels() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        height, width = (int(v) for v in rng.integers(4, 20, 2))
        size = int(rng.integers(2, 6))
        items = blocks(height, width, size)
        n_items = int(items.max()) + 1
        strokes = random_strokes(rng, height, width)
        mask = rasterize_strokes(strokes, (height, width))
        expected = half_rule_by_loops(mask, items, n_items)
        assert items_under(mask, items, n_items).tolist() == expected


def test_items_absent_from_the_image_are_never_labeled() -> None:
    items = np.array([[0, 0], [2, 2]], dtype=np.int32)  # item 1 has no pixel
    mask = np.ones((2, 2), dtype=bool)
    np.testing.assert_array_equal(items_under(mask, items, 3), [0, 2])


@pytest.mark.parametrize(
    ("mask", "items", "n_items", "rule", "message"),
    [
        (np.ones((2, 2), dtype=int), np.zeros((2, 2), int), 1, "half", "mask must be a boolean"),
        (np.ones((2, 2), bool), np.zeros((2, 3), int), 1, "half", "of one shape, got (2, 2)"),
        (np.ones((2, 2), bool), np.full((2, 2), 3), 3, "half", "item ids in 0..2"),
        (np.ones((2, 2), bool), np.full((2, 2), -1), 3, "half", "item ids in 0..2"),
        (np.ones((2, 2), bool), np.zeros((2, 2)), 1, "half", "item ids in 0..0"),
        (np.ones((2, 2), bool), np.zeros((2, 2), int), 0, "half", "n_items must be >= 1"),
        (np.ones((2, 2), bool), np.zeros((2, 2), int), 1, "most", "rule must be one of"),
    ],
)
def test_items_under_errors(
    mask: BoolArray, items: NDArray[np.int64], n_items: int, rule: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        items_under(mask, items, n_items, rule)
