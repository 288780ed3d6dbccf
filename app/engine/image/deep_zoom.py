"""Deep Zoom pyramids: an image (or a run's cluster mask) at every power-of-two scale, cut into
tiles a viewer such as OpenSeadragon fetches as it zooms and pans.

Deep Zoom's conventions (Microsoft's format, what OpenSeadragon's ``.dzi`` tile source reads):
level ``max_level`` is the full image, with ``max_level = ceil(log2(max(width, height)))``;
each level below halves both sides, rounding up, down to level 0 (1 x 1). A level is cut into
``tile_size`` squares from its top-left corner, the last row and column smaller; each tile
also carries ``overlap`` pixels of its neighbours on every side that has one.

Pictures are halved by averaging 2 x 2 blocks (an odd last row or column is averaged with
itself), masks by keeping the top-left pixel of each block: a cluster id is a name, not a
quantity, and an average of two ids is neither.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

TILE_SIZE = 254  # with a one-pixel overlap each side, a tile is at most 256 px: OpenSeadragon's
OVERLAP = 1  # usual choice


@dataclass(frozen=True)
class DeepZoom:
    """The levels and tiles of a ``width`` x ``height`` image."""

    width: int
    height: int
    tile_size: int = TILE_SIZE
    overlap: int = OVERLAP

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"an image of {self.width} x {self.height} pixels has no pyramid")
        if not 0 <= self.overlap < self.tile_size:
            raise ValueError("the overlap must be at least 0 and smaller than a tile")

    @property
    def max_level(self) -> int:
        return math.ceil(math.log2(max(self.width, self.height)))

    def level_size(self, level: int) -> tuple[int, int]:
        """(width, height) of ``level``."""
        self._check_level(level)
        scale = 2 ** (self.max_level - level)
        return -(-self.width // scale), -(-self.height // scale)

    def grid(self, level: int) -> tuple[int, int]:
        """(columns, rows) of tiles at ``level``."""
        width, height = self.level_size(level)
        return -(-width // self.tile_size), -(-height // self.tile_size)

    def tile_box(self, level: int, column: int, row: int) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) of a tile in ``level``'s pixels, its overlap included; a
        ValueError for a tile the level does not have."""
        columns, rows = self.grid(level)
        if not (0 <= column < columns and 0 <= row < rows):
            raise ValueError(
                f"level {level} has tiles 0-{columns - 1} x 0-{rows - 1}, not {column} x {row}"
            )
        width, height = self.level_size(level)
        x0 = column * self.tile_size - (self.overlap if column > 0 else 0)
        y0 = row * self.tile_size - (self.overlap if row > 0 else 0)
        x1 = min((column + 1) * self.tile_size + self.overlap, width)
        y1 = min((row + 1) * self.tile_size + self.overlap, height)
        return x0, y0, x1, y1

    def descriptor(self, tile_format: str = "png") -> str:
        """The ``.dzi`` XML that describes the pyramid to a viewer."""
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<Image xmlns="http://schemas.microsoft.com/deepzoom/2008" '
            f'TileSize="{self.tile_size}" Overlap="{self.overlap}" Format="{tile_format}">'
            f'<Size Width="{self.width}" Height="{self.height}"/></Image>\n'
        )

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.max_level:
            raise ValueError(f"levels go from 0 to {self.max_level}, not {level}")


def halve_picture(image: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """An (h, w) or (h, w, c) uint8 picture at half size (sides rounded up), each pixel the
    rounded mean of its 2 x 2 block (an odd edge's block is the edge pixel twice)."""
    if image.shape[0] % 2 or image.shape[1] % 2:
        pad = [(0, image.shape[0] % 2), (0, image.shape[1] % 2)] + [(0, 0)] * (image.ndim - 2)
        image = np.pad(image, pad, mode="edge")
    total = (
        image[0::2, 0::2].astype(np.uint16)
        + image[1::2, 0::2]
        + image[0::2, 1::2]
        + image[1::2, 1::2]
    )
    return ((total + 2) // 4).astype(np.uint8)


def halve_mask(mask: NDArray[np.integer]) -> NDArray[np.integer]:
    """A cluster mask at half size (sides rounded up): each block's top-left id."""
    return mask[0::2, 0::2]


def levels(
    full: NDArray[np.generic],
    *,
    mask: bool = False,
    halve: Callable[[Any], NDArray[np.generic]] | None = None,
) -> Iterator[tuple[int, NDArray[np.generic]]]:
    """(level, pixels) from the full image (``max_level``) down to level 0; each halved by
    ``halve`` (a picture's or a mask's halving unless given)."""
    zoom = DeepZoom(full.shape[1], full.shape[0])
    halving: Callable[[Any], NDArray[Any]] = halve or (halve_mask if mask else halve_picture)
    current = full
    for level in range(zoom.max_level, -1, -1):
        yield level, current
        if level:
            current = halving(current)


def coloured(mask: NDArray[np.integer], colours: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """A mask tile as RGBA: cluster c takes ``colours[c % len(colours)]`` (rows of RGBA)."""
    return colours[np.asarray(mask, dtype=np.int64) % len(colours)]
