"""Images whose channels are measurements, not a photo's colours (DESIGN.md Sec. 9).

A microscope's 16-bit DAPI channel may use 200..3,000 of its 65,535 levels and its GFP channel
100..60,000; dividing by the dtype's range (what ``img_as_float32`` does for photos) would leave
the first nearly flat, and a min-max range lets a few saturated pixels set the scale. Each
channel is therefore mapped by its own robust range: the ``LOW`` and ``HIGH`` percentiles go to
0 and 1 (not clipped, so bright structure keeps its order), as cellpose normalises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.engine.image.display import default_display, render
from app.engine.image.float32_safe import within_float32

Float32Array = NDArray[np.float32]

MAX_CHANNELS = 16
LOW, HIGH = 0.5, 99.5  # percentiles mapped to 0 and 1
# Percentiles come from a regular subsample of at most this many pixels per channel: exact
# enough for a range, and the same on every call (no random state).
PERCENTILE_SAMPLE = 2**20


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


def composite(planes: NDArray[np.generic], ranges: NDArray[np.float64]) -> NDArray[np.uint8]:
    """(h, w, 3) uint8 for display of (C, h, w) ``planes`` as shown by default: each channel
    in its default colour over its robust range, the channels added (``display.render``; a
    whole image, or one band of a slide's)."""
    return render(planes, default_display(ranges))
