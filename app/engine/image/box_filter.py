"""A moving average down the columns of an image, as ``scipy.ndimage.uniform_filter1d(...,
axis=0, mode="reflect")`` computes it, several times faster.

scipy filters along axis 0 one column at a time, gathering each strided column into a buffer:
on a 1,024 x 1,024 float32 map that takes 11 ms against 2 ms along the rows, and the energy
maps' box passes (``local_mean``) were the largest single cost of featurizing an image. Here a
running sum moves down whole rows at once (contiguous memory), accumulated in float64 as scipy
does, so the result is the same to the last bit on every input we compared. Written with row
operations so that it stays fast enough with ``NUMBA_DISABLE_JIT=1`` too (one Python step per
row)."""

import numba
import numpy as np
from numpy.typing import NDArray

Float32Array = NDArray[np.float32]


@numba.njit(nogil=True, cache=True)
def _mirror(index: int, n: int) -> int:
    """scipy's "reflect" (d c b a | a b c d | d c b a), repeated for reaches past the edge."""
    period = 2 * n
    m = index % period
    return m if m < n else period - 1 - m


@numba.njit(nogil=True, cache=True)
def _box_down(values: Float32Array, radius: int) -> Float32Array:
    height, width = values.shape
    out = np.empty((height, width), dtype=np.float32)
    total = np.zeros(width, dtype=np.float64)
    for offset in range(-radius, radius + 1):
        total += values[_mirror(offset, height)]
    scale = 1.0 / (2 * radius + 1)
    for row in range(height):
        out[row] = total * scale
        total += values[_mirror(row + radius + 1, height)]
        total -= values[_mirror(row - radius, height)]
    return out


def box_mean_down_columns(values: NDArray[np.floating], radius: int) -> Float32Array:
    """The mean over the ``2 * radius + 1`` rows centred on each pixel, mirrored at the edges:
    ``uniform_filter1d(values, 2 * radius + 1, axis=0, mode="reflect")`` as float32."""
    if values.ndim != 2:
        raise ValueError(f"values must be a 2-d map, got shape {values.shape}")
    if radius < 0:
        raise ValueError(f"radius must be at least 0, got {radius}")
    return _box_down(np.ascontiguousarray(values, dtype=np.float32), int(radius))
