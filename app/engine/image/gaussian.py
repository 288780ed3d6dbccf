"""A Gaussian blur equal to the last bit to ``skimage.filters.gaussian(plane, sigma)`` on a
float map (scipy's ``gaussian_filter``, ``mode="nearest"``, ``truncate=4``), 2-3x faster.

The blur at five scales of every channel was a fifth of a slide's featurization (py-spy, a
3-channel slide on one thread). scipy filters each line with a scalar loop over the kernel's
taps for each pixel; here each pass moves along whole rows at once, so the inner loop runs over
contiguous pixels and vectorises, in the same arithmetic: each output value is the centre tap
times its pixel, plus, from the farthest pair of taps inwards, (left + right) x weight, summed
in float64 and stored in the map's dtype, first down the columns, then along the rows (scipy's
order, its intermediate also stored in the map's dtype).

Written with row operations, so that with ``NUMBA_DISABLE_JIT=1`` the kernels run as numpy
(one Python step per row and tap); only the innermost pair-add is a loop when compiled
(``_add_pair_loop``), numpy otherwise (``_add_pair_rows``: the same operations). Even so, a
Python step per row and tap made the engine tests without the JIT 40 % slower, so there
``gaussian_blur`` calls scipy itself (the same bits), and the tests run the kernels
(``kernel_blur``) on small maps in both modes.
"""

import numba
import numpy as np
from numpy.typing import NDArray
from scipy import ndimage as ndi

from app.engine.core.jit_mode import JIT_OFF

TRUNCATE = 4.0  # skimage's and scipy's default: the kernel reaches 4 sigma


def gaussian_weights(sigma: float, truncate: float = TRUNCATE) -> NDArray[np.float64]:
    """scipy's kernel: exp(-x^2 / 2 sigma^2) over |x| <= int(truncate sigma + 0.5), summing
    to 1."""
    radius = int(truncate * float(sigma) + 0.5)
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / (float(sigma) * float(sigma)) * x**2)
    return np.asarray(phi / phi.sum(), dtype=np.float64)


@numba.njit(nogil=True, cache=True)
def _add_pair_loop(
    acc: NDArray[np.float64], weight: float, a: NDArray[np.floating], b: NDArray[np.floating]
) -> None:
    for c in range(acc.shape[0]):
        acc[c] += (np.float64(a[c]) + np.float64(b[c])) * weight


def _add_pair_rows(
    acc: NDArray[np.float64], weight: float, a: NDArray[np.floating], b: NDArray[np.floating]
) -> None:
    acc += (a.astype(np.float64) + b) * weight


_add_pair = _add_pair_rows if JIT_OFF else _add_pair_loop


@numba.njit(nogil=True, cache=True)
def _blur_down(values: NDArray[np.floating], weights: NDArray[np.float64]) -> NDArray[np.floating]:
    height, width = values.shape
    reach = weights.shape[0] // 2
    out = np.empty((height, width), dtype=values.dtype)
    acc = np.empty(width, dtype=np.float64)
    for row in range(height):
        acc[:] = values[row].astype(np.float64) * weights[reach]
        for j in range(reach, 0, -1):
            above = values[max(row - j, 0)]
            below = values[min(row + j, height - 1)]
            _add_pair(acc, weights[reach - j], above, below)
        out[row] = acc
    return out


@numba.njit(nogil=True, cache=True)
def _blur_along(values: NDArray[np.floating], weights: NDArray[np.float64]) -> NDArray[np.floating]:
    height, width = values.shape
    reach = weights.shape[0] // 2
    out = np.empty((height, width), dtype=values.dtype)
    acc = np.empty(width, dtype=np.float64)
    line = np.empty(width + 2 * reach, dtype=values.dtype)
    for row in range(height):
        line[reach : reach + width] = values[row]
        line[:reach] = values[row, 0]  # "nearest": the edge pixel repeated
        line[reach + width :] = values[row, width - 1]
        acc[:] = line[reach : reach + width].astype(np.float64) * weights[reach]
        for j in range(reach, 0, -1):
            left = line[reach - j : reach - j + width]
            right = line[reach + j : reach + j + width]
            _add_pair(acc, weights[reach - j], left, right)
        out[row] = acc
    return out


def gaussian_blur(plane: NDArray[np.floating], sigma: float) -> NDArray[np.floating]:
    """``skimage.filters.gaussian(plane, sigma, preserve_range=False)`` of a 2-d float32 or
    float64 map, in its dtype."""
    if plane.ndim != 2:
        raise ValueError(f"a map to blur is 2-d, got shape {plane.shape}")
    if plane.dtype not in (np.float32, np.float64):
        raise ValueError(f"a map to blur is float32 or float64, got {plane.dtype}")
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    if JIT_OFF:
        return np.asarray(
            ndi.gaussian_filter(plane, sigma, mode="nearest", truncate=TRUNCATE),
            dtype=plane.dtype,
        )
    return kernel_blur(plane, sigma)


def kernel_blur(plane: NDArray[np.floating], sigma: float) -> NDArray[np.floating]:
    """The blur by this module's kernels (``gaussian_blur`` checks the arguments)."""
    weights = gaussian_weights(sigma)
    values = np.ascontiguousarray(plane)
    return _blur_along(_blur_down(values, weights), weights)
