"""Deep Zoom levels and tiles against their definition, brute force on small images."""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine.image.deep_zoom import DeepZoom, coloured, halve_mask, halve_picture, levels


def test_levels_halve_the_sides_rounding_up_down_to_one_pixel() -> None:
    zoom = DeepZoom(600, 400)
    assert zoom.max_level == 10  # 2^9 < 600 <= 2^10
    assert zoom.level_size(10) == (600, 400)
    assert zoom.level_size(9) == (300, 200)
    assert zoom.level_size(8) == (150, 100)
    assert zoom.level_size(7) == (75, 50)
    assert zoom.level_size(6) == (38, 25)  # 600 / 16 = 37.5
    assert zoom.level_size(0) == (1, 1)
    assert DeepZoom(1, 1).max_level == 0
    with pytest.raises(ValueError, match="levels go from 0 to 10, not 11"):
        zoom.level_size(11)


@given(
    width=st.integers(1, 3000),
    height=st.integers(1, 3000),
    tile=st.integers(1, 300),
    overlap=st.integers(0, 3),
)
def test_tiles_cover_each_level_once_plus_their_overlap(
    width: int, height: int, tile: int, overlap: int
) -> None:
    zoom = DeepZoom(width, height, tile, min(overlap, tile - 1))
    overlap = zoom.overlap
    level = zoom.max_level - min(zoom.max_level, 2)
    level_width, level_height = zoom.level_size(level)
    scale = 2 ** (zoom.max_level - level)
    assert (level_width, level_height) == (math.ceil(width / scale), math.ceil(height / scale))
    columns, rows = zoom.grid(level)
    covered = np.zeros((level_height, level_width), dtype=np.int64)
    for column in range(columns):
        for row in range(rows):
            x0, y0, x1, y1 = zoom.tile_box(level, column, row)
            # without its overlap, a tile is its own square of the grid
            inner = (
                x0 + (overlap if column else 0),
                y0 + (overlap if row else 0),
                min(x1, (column + 1) * tile),
                min(y1, (row + 1) * tile),
            )
            assert inner[:2] == (column * tile, row * tile)
            assert 0 <= x0 < x1 <= level_width and 0 <= y0 < y1 <= level_height
            covered[inner[1] : inner[3], inner[0] : inner[2]] += 1
    assert (covered == 1).all()


def test_a_tile_outside_the_grid_is_refused() -> None:
    zoom = DeepZoom(600, 400)
    assert zoom.grid(10) == (3, 2)
    with pytest.raises(ValueError, match="level 10 has tiles 0-2 x 0-1, not 3 x 0"):
        zoom.tile_box(10, 3, 0)
    with pytest.raises(ValueError, match="not 0 x -1"):
        zoom.tile_box(10, 0, -1)
    with pytest.raises(ValueError, match="has no pyramid"):
        DeepZoom(0, 5)
    with pytest.raises(ValueError, match="smaller than a tile"):
        DeepZoom(5, 5, tile_size=2, overlap=2)


def test_the_descriptor_is_deep_zoom_xml() -> None:
    root = ET.fromstring(DeepZoom(600, 400).descriptor())
    assert root.tag == "{http://schemas.microsoft.com/deepzoom/2008}Image"
    assert root.attrib == {"TileSize": "254", "Overlap": "1", "Format": "png"}
    size = root.find("{http://schemas.microsoft.com/deepzoom/2008}Size")
    assert size is not None and size.attrib == {"Width": "600", "Height": "400"}


def test_halving_a_picture_averages_each_block_and_repeats_an_odd_edge() -> None:
    rng = np.random.default_rng(0)
    for shape in ((5, 7, 3), (4, 6), (1, 1, 3), (3, 2)):
        image = rng.integers(0, 256, size=shape, dtype=np.uint8)
        half = halve_picture(image)
        assert half.shape[:2] == (math.ceil(shape[0] / 2), math.ceil(shape[1] / 2))
        for y in range(half.shape[0]):
            for x in range(half.shape[1]):
                ys = [min(2 * y, shape[0] - 1), min(2 * y + 1, shape[0] - 1)]
                xs = [min(2 * x, shape[1] - 1), min(2 * x + 1, shape[1] - 1)]
                block = np.array([image[r, c] for r in ys for c in xs], dtype=np.float64)
                expected = np.floor(block.mean(axis=0) + 0.5)
                np.testing.assert_array_equal(half[y, x], expected)


def test_halving_a_mask_keeps_ids_and_never_averages_them() -> None:
    mask = np.array([[0, 5, 5], [7, 7, 1], [2, 2, 2]], dtype=np.int32)
    np.testing.assert_array_equal(halve_mask(mask), [[0, 5], [2, 2]])


def test_levels_run_from_the_full_image_to_one_pixel_with_the_descriptor_sizes() -> None:
    image = np.zeros((37, 70, 3), dtype=np.uint8)
    zoom = DeepZoom(70, 37)
    seen = list(levels(image))
    assert [level for level, _ in seen] == list(range(zoom.max_level, -1, -1))
    for level, pixels in seen:
        assert (pixels.shape[1], pixels.shape[0]) == zoom.level_size(level)
    mask_levels = list(levels(np.arange(70 * 37).reshape(37, 70), mask=True))
    assert mask_levels[-1][1].shape == (1, 1) and mask_levels[-1][1][0, 0] == 0


def test_a_mask_is_coloured_by_cluster_cycling_the_palette() -> None:
    palette = np.array([[255, 0, 0], [0, 255, 0]], dtype=np.uint8)
    out = coloured(np.array([[0, 1], [2, 3]]), palette)
    np.testing.assert_array_equal(out[..., 0], [[255, 0], [255, 0]])
    np.testing.assert_array_equal(out[..., 1], [[0, 255], [0, 255]])
