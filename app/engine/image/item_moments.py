"""Each superpixel's mean and standard deviation of every raw map, equal to the last bit to
``np.bincount`` per map (the mean, then the squared deviations from it), 3-4x faster.

Per map, the bincount way allocates the map in float64, the gathered means, the deviations and
their squares: four block-sized float64 arrays, and a fifth of a slide's featurization went
there (py-spy, one thread). Here one pass sums, a second sums the squared deviations, both in
float64 in pixel order as ``bincount`` does, with no temporary.

With ``NUMBA_DISABLE_JIT=1`` the per-map sums are ``bincount`` itself (``_sums_rows``), so that
the engine tests stay fast; compiled, the loops (``_sums_loop``), which the tests compare
against it on small maps in both modes.
"""

import numba
import numpy as np
from numpy.typing import NDArray

from app.engine.core.jit_mode import JIT_OFF

Float64Array = NDArray[np.float64]


@numba.njit(nogil=True, cache=True)
def _sums_loop(
    flat: NDArray[np.integer], values: NDArray[np.floating], counts: Float64Array
) -> tuple[Float64Array, Float64Array]:
    """Per item: the mean of ``values`` and the sum of squared deviations from it."""
    n = counts.shape[0]
    sums = np.zeros(n, dtype=np.float64)
    for i in range(flat.shape[0]):
        sums[flat[i]] += np.float64(values[i])
    means = sums / counts
    squares = np.zeros(n, dtype=np.float64)
    for i in range(flat.shape[0]):
        d = np.float64(values[i]) - means[flat[i]]
        squares[flat[i]] += d * d
    return means, squares


def _sums_rows(
    flat: NDArray[np.integer], values: NDArray[np.floating], counts: Float64Array
) -> tuple[Float64Array, Float64Array]:
    n = counts.shape[0]
    means = np.bincount(flat, weights=values, minlength=n) / counts
    squares = np.bincount(flat, weights=(values - means[flat]) ** 2, minlength=n)
    return means, squares.astype(np.float64, copy=False)  # float64 with weights already


_sums = _sums_rows if JIT_OFF else _sums_loop


def map_moments(
    flat: NDArray[np.integer], values: NDArray[np.floating], counts: Float64Array
) -> tuple[Float64Array, Float64Array]:
    """Per item of ``flat`` (0 .. n - 1, every one present, ``counts`` pixels each): the mean
    and the standard deviation of ``values``."""
    means, squares = _sums(flat, values, counts)
    return means, np.sqrt(squares / counts)
