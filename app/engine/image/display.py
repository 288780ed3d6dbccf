"""How an image of measured channels is shown: each channel on or off, in its colour, its values
from ``low`` (black) to ``high`` (full colour) stretched between them, the channels added.

What microscopy viewers (ImageJ, QuPath, napari) call channel visibility, lookup colour and
display range. The pixels are never changed: only their picture on screen, so a dim channel of
interest can be isolated and stretched while the features keep using every channel as measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.image.float32_safe import within_float32

RGB = tuple[float, float, float]

# Default colours of channels 1, 2, 3, ... (additive): one channel is grey; two are green and
# magenta (readable by colour-blind users).
_PALETTES: dict[int, list[RGB]] = {
    1: [(1.0, 1.0, 1.0)],
    2: [(0.0, 1.0, 0.0), (1.0, 0.0, 1.0)],
}
_MANY: list[RGB] = [
    (0.0, 0.0, 1.0),
    (0.0, 1.0, 0.0),
    (1.0, 0.0, 0.0),
    (1.0, 0.0, 1.0),
    (0.0, 1.0, 1.0),
    (1.0, 1.0, 0.0),
    (1.0, 0.5, 0.0),
    (0.5, 0.0, 1.0),
]
RENDER_ROWS = 128  # rows rendered at once: float temporaries of a whole slide band are GBs


@dataclass(frozen=True)
class ChannelDisplay:
    """One channel on screen: shown or not, its colour (RGB in 0..1), the values shown black
    (``low``) and in full colour (``high``), linear between and clipped outside."""

    visible: bool
    colour: RGB
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            raise ValueError(f"a display range is finite, not {self.low}..{self.high}")
        if not self.high > self.low:
            raise ValueError(
                f"the value shown in full colour ({self.high:g}) must be above the value "
                f"shown black ({self.low:g})"
            )
        if len(self.colour) != 3 or not all(0.0 <= c <= 1.0 for c in self.colour):
            raise ValueError(f"a colour is three values in 0..1, got {self.colour}")


def default_colours(n_channels: int) -> list[RGB]:
    palette = _PALETTES.get(n_channels, _MANY)
    return [palette[k % len(palette)] for k in range(n_channels)]


def default_display(ranges: NDArray[np.float64]) -> tuple[ChannelDisplay, ...]:
    """Every channel shown in its default colour over its robust range (``channels.ranges``)."""
    colours = default_colours(len(ranges))
    return tuple(
        ChannelDisplay(True, colour, float(low), float(high))
        for colour, (low, high) in zip(colours, ranges, strict=True)
    )


def render(planes: NDArray[np.generic], display: Sequence[ChannelDisplay]) -> NDArray[np.uint8]:
    """(h, w, 3) uint8 of (C, h, w) ``planes`` as ``display`` shows them (one per channel)."""
    if len(display) != planes.shape[0]:
        raise ValueError(f"{planes.shape[0]} channels need as many displays, got {len(display)}")
    height = planes.shape[1]
    out = np.empty((*planes.shape[1:], 3), dtype=np.uint8)
    for start in range(0, height, RENDER_ROWS):
        rows = slice(start, min(start + RENDER_ROWS, height))
        rgb = np.zeros((*planes[:, rows].shape[1:], 3), dtype=np.float32)
        for k, shown in enumerate(display):
            if not shown.visible or not any(shown.colour):
                continue
            values, low, high = within_float32(planes[k, rows], shown.low, shown.high)
            level = np.clip((values.astype(np.float32) - low) / (high - low), 0, 1)
            for c in range(3):
                if shown.colour[c]:
                    rgb[:, :, c] += np.float32(shown.colour[c]) * level
        out[rows] = np.round(np.clip(rgb, 0, 1) * 255)
    return out


def halve_channels(image: NDArray[Any]) -> NDArray[Any]:
    """An (h, w, C) image of measured channels at half size (sides rounded up), in its dtype:
    each pixel the mean of its 2 x 2 block (rounded for integers; an odd edge's block is the
    edge pixel twice), as ``deep_zoom.halve_picture`` halves a photo."""
    if image.shape[0] % 2 or image.shape[1] % 2:
        pad = [(0, image.shape[0] % 2), (0, image.shape[1] % 2)] + [(0, 0)] * (image.ndim - 2)
        image = np.pad(image, pad, mode="edge")
    total = (
        image[0::2, 0::2].astype(np.float64)
        + image[1::2, 0::2]
        + image[0::2, 1::2]
        + image[1::2, 1::2]
    )
    mean = total / 4
    if image.dtype.kind in "iub":
        mean = np.floor(mean + 0.5)
    return mean.astype(image.dtype)
