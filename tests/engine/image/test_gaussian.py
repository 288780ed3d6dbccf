"""The row-wise Gaussian blur against skimage.filters.gaussian, which it replaces: equal to the
last bit, on every shape (a map smaller than the kernel included) and in both float dtypes."""

import numpy as np
import pytest
from skimage import filters

from app.engine.image.gaussian import (
    _add_pair_loop,
    _add_pair_rows,
    gaussian_blur,
    gaussian_weights,
    kernel_blur,
)


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (7, 1), (5, 3), (33, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 16.0])
def test_equals_skimage_to_the_bit(shape: tuple[int, int], dtype: type, sigma: float) -> None:
    plane = np.random.default_rng(7).normal(0.0, 3.0, shape).astype(dtype)
    expected = filters.gaussian(plane, sigma=sigma, preserve_range=False)
    for got in (gaussian_blur(plane, sigma), kernel_blur(plane, sigma)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_a_strided_view_is_blurred_as_its_copy() -> None:
    plane = np.random.default_rng(1).random((40, 60), dtype=np.float32)
    view = plane[::2, 5:50]
    np.testing.assert_array_equal(kernel_blur(view, 2.0), kernel_blur(view.copy(), 2.0))
    np.testing.assert_array_equal(gaussian_blur(view, 2.0), kernel_blur(view.copy(), 2.0))


def test_weights_are_scipys_kernel() -> None:
    weights = gaussian_weights(2.0)
    assert weights.size == 2 * 8 + 1  # int(4 * 2 + 0.5) each side
    assert weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(weights, weights[::-1])
    x = np.arange(-8, 9)
    np.testing.assert_allclose(weights, np.exp(-(x**2) / 8) / np.exp(-(x**2) / 8).sum())


def test_the_compiled_and_the_numpy_pair_add_agree_to_the_bit() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(11, dtype=np.float32), rng.random(11, dtype=np.float32)
    start = rng.random(11)
    loop, rows = start.copy(), start.copy()
    _add_pair_loop(loop, 0.123, a, b)
    _add_pair_rows(rows, 0.123, a, b)
    np.testing.assert_array_equal(loop, rows)
    np.testing.assert_array_equal(loop, start + (a.astype(np.float64) + b) * 0.123)


@pytest.mark.parametrize(
    ("plane", "sigma", "message"),
    [
        (np.zeros((3, 3, 3), dtype=np.float32), 1.0, "2-d"),
        (np.zeros((3, 3), dtype=np.uint8), 1.0, "float32 or float64"),
        (np.zeros((3, 3), dtype=np.float32), 0.0, "positive"),
        (np.zeros((3, 3), dtype=np.float32), float("nan"), "positive"),
    ],
)
def test_refuses_what_it_cannot_blur(plane: np.ndarray, sigma: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gaussian_blur(plane, sigma)
