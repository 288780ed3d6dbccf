"""Featurization in halo'd blocks equals featurization of the whole picture
(app/engine/image/blockwise.py): the reach of the filters, pixel features to 1e-5, superpixels
stitched across blocks with exact per-item statistics."""

import numpy as np
import pytest
from scipy import ndimage as ndi

from app.engine.image._filter_bank import image_channels, in_colour_space, map_groups
from app.engine.image.blockwise import Moments, even_chunks, filter_reach
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Recipe, apply_featurization, featurize


def textured(height: int, width: int, seed: int = 0) -> np.ndarray:
    """An RGB photo with structure at several scales (smoothed noise plus a few edges)."""
    rng = np.random.default_rng(seed)
    layers = [ndi.gaussian_filter(rng.normal(size=(height, width)), s) * s for s in (1, 4, 12)]
    base = sum(layers)
    rows, cols = np.mgrid[:height, :width]
    base += 2.0 * ((rows // 37 + cols // 53) % 2)
    rgb = np.stack([base, np.roll(base, 7, axis=0), base[::-1]], axis=2)
    rgb = (rgb - rgb.min()) / (rgb.max() - rgb.min())
    return (rgb * 255).astype(np.uint8)


def close(block: np.ndarray, whole: np.ndarray) -> None:
    """Equal to 1e-5 of the values' scale (scipy's box filter keeps a running sum, so the last
    bits depend on where a line starts)."""
    np.testing.assert_allclose(block, whole, rtol=1e-5, atol=1e-5 * float(np.abs(whole).max()))


@pytest.mark.parametrize(
    ("filters", "sigma", "energy", "window"),
    [
        (("intensity",), 2.0, 3.0, 0),
        (("intensity", "edges"), 1.5, 3.0, 0),
        (("intensity", "edges", "texture"), 3.0, 2.0, 0),
        (("intensity", "edges", "texture"), 2.0, 0.0, 0),
        ((), 1.0, 0.0, 5),
    ],
)
def test_no_map_looks_further_than_the_reach(
    filters: tuple[str, ...], sigma: float, energy: float, window: int
) -> None:
    """Brute force: change one pixel; no map changes further away than ``filter_reach``."""
    size = 121
    rng = np.random.default_rng(1)
    plane = rng.random((1, size, size)).astype(np.float32)
    poked = plane.copy()
    poked[0, size // 2, size // 2] += 1.0
    reach = filter_reach(filters, (sigma,), energy, window)
    assert reach < size // 2
    a = np.concatenate(list(map_groups(plane, filters, (sigma,), energy, window)))
    b = np.concatenate(list(map_groups(poked, filters, (sigma,), energy, window)))
    changed = np.any(a.reshape(-1, size, size) != b.reshape(-1, size, size), axis=0)
    rows, cols = np.nonzero(changed)
    distance = np.maximum(np.abs(rows - size // 2), np.abs(cols - size // 2))
    assert distance.max() <= reach
    assert distance.max() >= reach - 2  # and the reach is not loose


def test_the_default_recipe_reaches_210_pixels() -> None:
    recipe = Recipe()
    reach = filter_reach(recipe.filters, recipe.sigmas, recipe.energy_window, recipe.window)
    assert reach == 64 + 2 + 3 * 48


def test_blocks_are_near_equal_with_no_sliver() -> None:
    assert even_chunks(10, 4) == (5, 5)
    assert even_chunks(4097, 2048) == (2048, 2049)
    assert even_chunks(100, 2048) == (100,)
    parts = even_chunks(12_345, 700)
    assert sum(parts) == 12_345 and min(parts) >= 700 and max(parts) - min(parts) <= 1


def test_moments_merge_like_one_pass_over_everything() -> None:
    rng = np.random.default_rng(2)
    values = rng.normal(1e4, 3.0, size=(2, 1000))
    parts = [values[:, :10], values[:, 10:400], values[:, 400:]]
    total = Moments(0, np.zeros(2), np.zeros(2))
    for part in parts:
        mean = part.mean(axis=1)
        total = total.merged(Moments(part.shape[1], mean, ((part - mean[:, None]) ** 2).sum(1)))
    assert total.count == 1000
    np.testing.assert_allclose(total.mean, values.mean(axis=1), rtol=1e-13)
    np.testing.assert_allclose(total.std, values.std(axis=1), rtol=1e-10)


def test_pixel_features_in_blocks_equal_the_whole_pictures() -> None:
    photo = textured(200, 230)
    recipe = Recipe(sigmas=(1.0, 2.0, 4.0), superpixels="never")
    whole = featurize(photo, recipe, block_size=0)
    seen: list[float] = []
    blocks = featurize(photo, recipe, progress=seen.append, block_size=64)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 4
    assert blocks.raw_feature_names == whole.raw_feature_names
    np.testing.assert_allclose(blocks.fitted.scaler_mean, whole.fitted.scaler_mean, rtol=1e-6)
    np.testing.assert_allclose(blocks.fitted.scaler_scale, whole.fitted.scaler_scale, rtol=1e-6)
    close(blocks.features, whole.features)
    np.testing.assert_array_equal(blocks.item_of_pixel, whole.item_of_pixel)
    # A reduction fitted on the whole picture applies in blocks alike.
    other = textured(150, 170, seed=4)
    close(
        apply_featurization(other, recipe, whole.fitted, block_size=64).features,
        apply_featurization(other, recipe, whole.fitted, block_size=0).features,
    )


def test_16_bit_channels_with_the_default_filters_in_blocks() -> None:
    """The default recipe's reach (210 pixels) across blocks of 256."""
    rng = np.random.default_rng(5)
    planes = (textured(520, 600).transpose(2, 0, 1).astype(np.uint16) * 200) + rng.integers(
        0, 50, (3, 520, 600), dtype=np.uint16
    )
    image = Multichannel.of(planes, ["DAPI", "GFP", "RFP"])
    recipe = Recipe(superpixels="never")
    close(
        featurize(image, recipe, block_size=256).features,
        featurize(image, recipe, block_size=0).features,
    )


def test_superpixels_in_blocks_are_stitched_across_them_and_average_exactly() -> None:
    photo = textured(300, 260)
    recipe = Recipe(sigmas=(1.0, 3.0), superpixels="always", n_segments=300)
    result = featurize(photo, recipe, block_size=100)
    items = result.item_of_pixel
    assert sorted(np.unique(items)) == list(range(result.n_items))
    whole = featurize(photo, recipe, block_size=0)
    assert abs(result.n_items - whole.n_items) < 0.2 * whole.n_items
    # Blocks of 300 x 260 at 100: rows cut at 100 and 200, columns at 130. An item is one
    # block's piece or two pieces joined across an edge, in one connected region.
    row_block = np.digitize(np.arange(300), [100, 200])
    col_block = np.digitize(np.arange(260), [130])
    block_of_pixel = row_block[:, None] * 2 + col_block[None, :]
    spans = [np.unique(block_of_pixel[items == item]).size for item in range(result.n_items)]
    assert max(spans) == 2 and spans.count(2) >= 5
    for item in np.flatnonzero(np.array(spans) == 2):
        assert ndi.label(items == item)[1] == 1
    # Along the edges, fewer than all neighbours across differ (all would: never stitched).
    across = np.concatenate(
        [items[99] != items[100], items[199] != items[200], items[:, 129] != items[:, 130]]
    )
    assert across.mean() < 0.9
    # Each item's raw means are the whole picture's maps averaged over its pixels.
    channels = in_colour_space(image_channels(photo), recipe.colour)
    maps = np.concatenate(
        list(map_groups(channels, recipe.filters, recipe.sigmas, recipe.energy_window, 0))
    )
    counts = np.bincount(items.ravel())
    expected_means = np.stack(
        [np.bincount(items.ravel(), weights=m) / counts for m in maps], axis=1
    )
    n_maps = maps.shape[0]
    # The reduction's standardisation means are the mean over items of those means.
    np.testing.assert_allclose(
        result.fitted.scaler_mean[:n_maps], expected_means.mean(axis=0), rtol=1e-5, atol=1e-6
    )


def test_superpixels_in_blocks_follow_edges_as_well_as_whole() -> None:
    rows, cols = np.mgrid[:240, :240]
    truth = ((rows - 110) ** 2 + (cols - 130) ** 2 < 70**2).astype(int)
    rng = np.random.default_rng(3)
    grey = np.clip(90 + 80 * truth + rng.normal(0, 12, truth.shape), 0, 255).astype(np.uint8)
    recipe = Recipe(sigmas=(1.0,), superpixels="always", n_segments=200)

    def purity(items: np.ndarray) -> float:
        n = int(items.max()) + 1
        counts = np.bincount(items.ravel() * 2 + truth.ravel(), minlength=2 * n)
        return float(counts.reshape(n, 2).max(axis=1).sum() / truth.size)

    whole = purity(featurize(grey, recipe, block_size=0).item_of_pixel)
    blocks = purity(featurize(grey, recipe, block_size=80).item_of_pixel)
    assert whole > 0.97 and blocks > whole - 0.01


@pytest.mark.parametrize("size", [-1, 1, 15])
def test_bad_block_sizes_are_refused(size: int) -> None:
    with pytest.raises(ValueError, match="block_size"):
        featurize(textured(20, 20), Recipe(sigmas=(1.0,)), block_size=size)
