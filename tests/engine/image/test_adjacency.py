"""Region (superpixel) adjacency and links: a hand-made label image, a per-pixel loop, the grid."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numpy.typing import NDArray

from app.engine.image import grid_links, region_adjacency, region_links

IntArray = NDArray[np.int64]


def test_hand_made_label_image() -> None:
    items = np.array(
        [
            [0, 0, 1],
            [0, 2, 1],
            [2, 2, 1],
        ]
    )
    pairs, border = region_adjacency(items)
    # 0-1: (0,1)-(0,2); 0-2: (0,1)-(1,1), (1,0)-(1,1), (1,0)-(2,0); 1-2: (1,1)-(1,2), (2,1)-(2,2)
    np.testing.assert_array_equal(pairs, [[0, 1], [0, 2], [1, 2]])
    np.testing.assert_array_equal(border, [1, 3, 2])
    links, weights = region_links(items, 1.5)
    np.testing.assert_array_equal(links, pairs)
    np.testing.assert_allclose(weights, 1.5 * np.array([1, 3, 2]) / 2)


def test_diagonal_contact_is_not_adjacency() -> None:
    pairs, _ = region_adjacency(np.array([[0, 1], [1, 0]]))
    np.testing.assert_array_equal(pairs, [[0, 1]])
    pairs, _ = region_adjacency(np.array([[0, 1], [2, 3]]))
    np.testing.assert_array_equal(pairs, [[0, 1], [0, 2], [1, 3], [2, 3]])


def test_equals_a_loop_over_pixel_neighbours() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        raw = rng.integers(0, 6, size=(int(rng.integers(1, 9)), int(rng.integers(1, 9))))
        # Regions are numbered in the sorted order of the labels present.
        items = np.unique(raw, return_inverse=True)[1].reshape(raw.shape)
        counts: dict[tuple[int, int], int] = {}
        height, width = items.shape
        for r in range(height):
            for c in range(width):
                for rr, cc in ((r, c + 1), (r + 1, c)):
                    if rr < height and cc < width and items[r, c] != items[rr, cc]:
                        key = (min(items[r, c], items[rr, cc]), max(items[r, c], items[rr, cc]))
                        counts[key] = counts.get(key, 0) + 1
        pairs, border = region_adjacency(raw)
        assert [tuple(p) for p in pairs.tolist()] == sorted(counts)
        assert border.tolist() == [counts[k] for k in sorted(counts)]


def test_pixel_items_give_the_grid_links() -> None:
    height, width = 5, 7
    pairs, weights = region_links(np.arange(height * width).reshape(height, width), 0.8)
    grid_pairs, grid_weights = grid_links(height, width, 0.8)
    assert sorted(map(tuple, pairs.tolist())) == sorted(map(tuple, grid_pairs.tolist()))
    np.testing.assert_allclose(weights, 0.8)
    np.testing.assert_allclose(grid_weights, 0.8)


def test_hard_links_and_a_single_item() -> None:
    _, weights = region_links(np.array([[0, 1, 1]]), np.inf)
    np.testing.assert_array_equal(weights, [np.inf])
    pairs, weights = region_links(np.zeros((3, 3), dtype=int), 1.0)
    assert pairs.shape == (0, 2) and weights.shape == (0,)


@pytest.mark.parametrize(
    ("items", "weight", "message"),
    [
        (np.zeros(4, int), 1.0, "segments must be a non-empty 2-D label grid, got shape (4,)"),
        (np.zeros((2, 2)), 1.0, "segments must hold integer region labels, got dtype float64"),
        (np.zeros((2, 2), int), float("nan"), "weight must be a number or +inf, got nan"),
        (np.zeros((2, 2), int), -np.inf, "weight must be a number or +inf, got -inf"),
        (np.zeros((2, 2), int), "1", "weight must be a number or +inf, got '1'"),
    ],
)
def test_errors(items: IntArray, weight: float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        region_links(items, weight)
