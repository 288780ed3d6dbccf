"""The column box filter against scipy's and against a brute-force mean of mirrored rows."""

import numpy as np
import pytest
from scipy import ndimage as ndi

from app.engine.image.box_filter import box_mean_down_columns


def _brute(values: np.ndarray, radius: int) -> np.ndarray:
    height = values.shape[0]
    period = 2 * height
    out = np.zeros(values.shape, dtype=np.float64)
    for row in range(height):
        for offset in range(-radius, radius + 1):
            m = (row + offset) % period
            out[row] += values[m if m < height else period - 1 - m]
    return out / (2 * radius + 1)


@pytest.mark.parametrize("height", [1, 2, 3, 7, 40])
@pytest.mark.parametrize("radius", [0, 1, 2, 5, 17])
def test_equals_scipy_and_brute_force(height: int, radius: int) -> None:
    values = np.random.default_rng(height * 31 + radius).normal(size=(height, 6)).astype(np.float32)
    got = box_mean_down_columns(values, radius)
    assert got.dtype == np.float32
    want = ndi.uniform_filter1d(values, 2 * radius + 1, axis=0, mode="reflect")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got, _brute(values.astype(np.float64), radius), rtol=1e-5, atol=1e-6)


def test_takes_views_and_other_dtypes() -> None:
    values = np.random.default_rng(0).random((30, 20))
    view = values[::2, 1::3]  # not contiguous, float64
    want = ndi.uniform_filter1d(view.astype(np.float32), 5, axis=0, mode="reflect")
    np.testing.assert_allclose(box_mean_down_columns(view, 2), want, rtol=1e-6)


def test_a_constant_map_stays_constant() -> None:
    values = np.full((50, 9), 3.25, dtype=np.float32)
    np.testing.assert_array_equal(box_mean_down_columns(values, 12), values)


@pytest.mark.parametrize(("shape", "radius"), [((4,), 1), ((2, 2, 2), 1), ((3, 3), -1)])
def test_refuses_what_it_cannot_filter(shape: tuple[int, ...], radius: int) -> None:
    with pytest.raises(ValueError):
        box_mean_down_columns(np.zeros(shape, dtype=np.float32), radius)
