"""Superpixel means and spreads against the bincount formulas they replace, to the bit."""

import numpy as np
import pytest

from app.engine.image.item_moments import _sums_loop, _sums_rows, map_moments


def labels_and_values(n_pixels: int, n_items: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    flat = rng.integers(0, n_items, n_pixels).astype(np.int32)
    flat[:n_items] = np.arange(n_items)  # every item present
    return flat, rng.normal(5.0, 2.0, n_pixels).astype(np.float32)


@pytest.mark.parametrize(("n_pixels", "n_items"), [(1, 1), (10, 3), (2_000, 37)])
def test_equal_to_bincount_to_the_bit(n_pixels: int, n_items: int) -> None:
    flat, values = labels_and_values(n_pixels, n_items, seed=n_pixels)
    counts = np.bincount(flat, minlength=n_items).astype(np.float64)
    mean = np.bincount(flat, weights=values, minlength=n_items) / counts
    spread = np.bincount(flat, weights=(values - mean[flat]) ** 2, minlength=n_items)
    got_mean, got_std = map_moments(flat, values, counts)
    np.testing.assert_array_equal(got_mean, mean)
    np.testing.assert_array_equal(got_std, np.sqrt(spread / counts))


def test_against_brute_force_per_item() -> None:
    flat, values = labels_and_values(500, 9, seed=4)
    counts = np.bincount(flat, minlength=9).astype(np.float64)
    mean, std = map_moments(flat, values, counts)
    for item in range(9):
        mine = values[flat == item].astype(np.float64)
        assert mean[item] == pytest.approx(mine.mean(), rel=1e-12)
        assert std[item] == pytest.approx(mine.std(), rel=1e-9, abs=1e-12)


def test_the_compiled_and_the_numpy_sums_agree_to_the_bit() -> None:
    flat, values = labels_and_values(300, 11, seed=5)
    counts = np.bincount(flat, minlength=11).astype(np.float64)
    loop = _sums_loop(flat, values, counts)
    rows = _sums_rows(flat, values, counts)
    for compiled, numpy_way in zip(loop, rows, strict=True):
        np.testing.assert_array_equal(compiled, numpy_way)
