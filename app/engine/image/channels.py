"""Images whose channels are measurements, not a photo's colours (DESIGN.md Sec. 9).

A microscope's 16-bit DAPI channel may use 200..3,000 of its 65,535 levels and its GFP channel
100..60,000; dividing by the dtype's range (what ``img_as_float32`` does for photos) would leave
the first nearly flat, and a min-max range lets a few saturated pixels set the scale. Each
channel is therefore mapped by its own robust range: the ``LOW`` and ``HIGH`` percentiles go to
0 and 1 (not clipped, so bright structure keeps its order), as cellpose normalises.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

Float32Array = NDArray[np.float32]

MAX_CHANNELS = 16
LOW, HIGH = 0.5, 99.5  # percentiles mapped to 0 and 1
# Percentiles come from a regular subsample of at most this many pixels per channel: exact
# enough for a range, and the same on every call (no random state).
PERCENTILE_SAMPLE = 2**20

# Display colours of channels 1, 2, 3, ... in a composite (additive, as microscopy viewers
# show them): one channel is grey; two are green and magenta (readable by colour-blind users).
_PALETTES = {
    1: [(1.0, 1.0, 1.0)],
    2: [(0.0, 1.0, 0.0), (1.0, 0.0, 1.0)],
}
_MANY = [
    (0.0, 0.0, 1.0),
    (0.0, 1.0, 0.0),
    (1.0, 0.0, 0.0),
    (1.0, 0.0, 1.0),
    (0.0, 1.0, 1.0),
    (1.0, 1.0, 0.0),
    (1.0, 0.5, 0.0),
    (0.5, 0.0, 1.0),
]


@dataclass(frozen=True, eq=False)
class Multichannel:
    """(C, H, W) planes of any real dtype with a name per channel (e.g. from OME metadata).

    Passed to ``featurize`` instead of an H x W x 3 array, it is featurized channel by channel
    after robust per-channel scaling; ``Recipe.colour`` does not apply.
    """

    planes: NDArray[np.generic]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        planes = np.asarray(self.planes)
        if planes.ndim != 3:
            raise ValueError(f"planes must be C x H x W, got shape {planes.shape}")
        n_channels, height, width = planes.shape
        if not 1 <= n_channels <= MAX_CHANNELS:
            raise ValueError(f"an image may have 1 to {MAX_CHANNELS} channels, got {n_channels}")
        if height < 2 or width < 2:
            raise ValueError(f"image must be at least 2 x 2 pixels, got {width} x {height}")
        if planes.dtype.kind not in "buif":
            raise ValueError(f"channels must hold real numbers, got dtype {planes.dtype}")
        if planes.dtype.kind == "f" and not np.all(np.isfinite(planes)):
            raise ValueError("image contains NaN or infinite values")
        names = tuple(str(n) for n in self.names)
        if len(names) != n_channels:
            raise ValueError(f"{n_channels} channels need as many names, got {len(names)}")
        if len(set(names)) != n_channels or not all(n.strip() for n in names):
            raise ValueError(f"channel names must be distinct and not blank, got {list(names)}")
        object.__setattr__(self, "planes", planes)
        object.__setattr__(self, "names", names)

    @classmethod
    def of(cls, planes: ArrayLike, names: Sequence[str] | None = None) -> Multichannel:
        """Named ``channel 1``, ``channel 2``, ... unless ``names`` are given."""
        array = np.asarray(planes)
        if array.ndim == 2:
            array = array[np.newaxis]
        given = names or [f"channel {k + 1}" for k in range(array.shape[0])]
        return cls(array, tuple(given))

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.planes.shape[1]), int(self.planes.shape[2])

    def ranges(self) -> NDArray[np.float64]:
        """(C, 2): each channel's LOW and HIGH percentile (``robust_range``)."""
        out = np.empty((self.planes.shape[0], 2))
        for k, plane in enumerate(self.planes):
            flat = plane.ravel()
            sample = flat[:: sample_step(flat.size)]
            out[k] = robust_range(sample, float(flat.min()), float(flat.max()))
        return out

    def scaled(self) -> Float32Array:
        """(C, H, W) float32 with each channel's robust range mapped to [0, 1]."""
        out = np.empty(self.planes.shape, dtype=np.float32)
        for k, (low, high) in enumerate(self.ranges()):
            plane, low, high = within_float32(self.planes[k], low, high)
            np.subtract(plane, low, out=out[k], casting="unsafe")
            out[k] /= np.float32(high - low)
        return out

    def composite(self) -> NDArray[np.uint8]:
        """H x W x 3 uint8 for display (``composite``)."""
        return composite(self.planes, self.ranges())


COMPOSITE_ROWS = 128  # rows of a composite made at once


def sample_step(n_pixels: int) -> int:
    """Every how many pixels (raster order) the percentile sample takes one."""
    return max(1, n_pixels // PERCENTILE_SAMPLE)


def robust_range(
    sample: NDArray[np.generic], minimum: float, maximum: float
) -> NDArray[np.float64]:
    """A channel's LOW and HIGH percentile of its ``sample``; HIGH > LOW always: a channel
    whose sample is flat gets its whole ``minimum``..``maximum``, and a flat channel a range of
    1, so it scales to a constant, not to NaN."""
    low, high = np.percentile(sample.astype(np.float64), [LOW, HIGH])
    if not high > low:
        low, high = minimum, maximum
    return np.array([low, high if high > low else low + 1.0])


# Channels whose values reach beyond this are scaled by a power of two before they are mapped to
# 0..1 in float32: float32 ends at 3.4e38, and a range like -1e308..1e308 (float64) or
# -3e38..3e38 (float32) made its span infinite, every scaled value NaN and the featurization's
# PCA fail ("Eigenvalues did not converge").
FLOAT32_SAFE = 1e30


def within_float32(
    values: NDArray[np.generic], low: float, high: float
) -> tuple[NDArray[np.generic], float, float]:
    """``values`` and their range as they are, or, for values beyond ``FLOAT32_SAFE``, all
    three multiplied by the same power of two (exact: only the exponent changes), so that
    ``(values - low) / (high - low)`` is finite in float32 and means the same."""
    reach = max(abs(low), abs(high))
    if reach <= FLOAT32_SAFE:
        return values, low, high
    factor = 2.0 ** -(math.frexp(reach)[1])  # reach * factor in [0.5, 1)
    return np.asarray(values, dtype=np.float64) * factor, low * factor, high * factor


def composite(planes: NDArray[np.generic], ranges: NDArray[np.float64]) -> NDArray[np.uint8]:
    """(h, w, 3) uint8 for display of (C, h, w) ``planes``: each channel clipped to its robust
    range, coloured and added (a whole image, or one band of a slide's). Made ``COMPOSITE_ROWS``
    rows at a time: the float temporaries of a whole band at once (a slide's 2,048 x 20,000 x 4
    channels) took 1.7 GB beside the 123 MB the result needs."""
    palette = _PALETTES.get(planes.shape[0], _MANY)
    height = planes.shape[1]
    out = np.empty((*planes.shape[1:], 3), dtype=np.uint8)
    for start in range(0, height, COMPOSITE_ROWS):
        rows = slice(start, min(start + COMPOSITE_ROWS, height))
        rgb = np.zeros((*planes[:, rows].shape[1:], 3), dtype=np.float32)
        for k, (low, high) in enumerate(ranges):
            values, low, high = within_float32(planes[k, rows], low, high)
            level = np.clip((values.astype(np.float32) - low) / (high - low), 0, 1)
            colour = palette[k % len(palette)]
            for c in range(3):
                if colour[c]:
                    rgb[:, :, c] += np.float32(colour[c]) * level
        out[rows] = np.round(np.clip(rgb, 0, 1) * 255)
    return out
