"""A TIFF too large to decode at once, read in bands of rows (a whole slide, DESIGN.md Sec. 9).

``open_bands`` checks the file as ``image_file.read_header`` does (one image, at most one
channel axis, every strip or tile inside the file) without decoding a pixel; ``TiffBands.bands``
then yields its rows band by band as (rows, columns, channels) arrays of the file's own dtype
(a photo's alpha dropped). Memory follows the band: a tiled or striped file is read through
tifffile's Zarr view (only the strips or tiles under the band are decoded), an uncompressed
file whose pixels lie in one run of bytes through a memory map of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import zarr
from numpy.typing import NDArray

from app.engine.image.image_file import (
    ImageFileError,
    ImageHeader,
    _check_complete,
    _one_series,
    _strict_tifffile,
    _tiff,
    _TiffLayout,
)


@dataclass
class TiffBands:
    """One TIFF image's rows, band by band; see the module docstring."""

    header: ImageHeader
    _layout: _TiffLayout
    _pixels: Any  # a zarr array or a numpy memmap of the series, axes as stored

    def bands(self, rows: int) -> Iterator[tuple[int, NDArray[np.generic]]]:
        """(first row, pixels (h, W, C)) for every ``rows`` rows, top to bottom."""
        for start in range(0, self.header.height, rows):
            yield start, self.region(start, min(start + rows, self.header.height))

    def region(self, start: int, stop: int) -> NDArray[np.generic]:
        """Rows [start, stop) as (h, W, C), C the channels (3 for a colour photo, 1 grey)."""
        axes = self._layout.axes
        where: list[int | slice] = []
        kept = ""
        for axis, size in zip(axes, self._pixels.shape, strict=True):
            if axis == "Y":
                where.append(slice(start, stop))
            elif axis == "X" or (size > 1 and axis in "CS"):
                where.append(slice(None))
            else:  # axes of length 1 (checked at opening)
                where.append(0)
                continue
            kept += axis
        with _strict_tifffile("TIFF"):
            try:
                band = np.asarray(self._pixels[tuple(where)])
            except (ValueError, OSError, RuntimeError, KeyError) as exc:
                raise ImageFileError(f"the TIFF image is truncated or corrupt ({exc})") from None
        if len(kept) == 2:
            band = band[..., np.newaxis]
            kept += "C"
        band = np.moveaxis(band, [kept.index("Y"), kept.index("X")], [0, 1])
        if self.header.photo:
            band = band[..., : self.header.channels]
        if band.dtype.byteorder == ">":
            band = band.astype(band.dtype.newbyteorder("<"))
        if band.dtype.kind == "f" and not np.all(np.isfinite(band)):
            raise ImageFileError(
                f"the TIFF image cannot be used: it holds NaN or infinite values (rows "
                f"{start:,} to {stop - 1:,})"
            )
        return np.ascontiguousarray(band)


@contextmanager
def open_bands(
    file: BinaryIO, size: int, check_header: Callable[[ImageHeader], None] = lambda _: None
) -> Iterator[TiffBands]:
    """The TIFF in ``file`` (``size`` bytes, seekable), checked, ready to read in bands;
    ``check_header`` (the size limits) first: a file too large to take is refused as such, not
    as the truncated or sparse file it may also be."""
    with _tiff(file) as tif:
        layout = _one_series(tif)
        check_header(layout.header)
        _check_complete(tif, size)
        series = layout.series
        pixels: Any
        if series.dataoffset is not None and _has_fileno(file):
            # Uncompressed and contiguous: tifffile's Zarr view would make the whole image
            # one chunk, so a band would decode all of it.
            dtype = np.dtype(series.dtype).newbyteorder(tif.byteorder)
            pixels = np.memmap(
                file, dtype=dtype, mode="r", offset=series.dataoffset, shape=series.shape
            )
        else:
            try:
                pixels = zarr.open_array(series.aszarr(level=0))
            except (ValueError, TypeError, KeyError) as exc:
                raise ImageFileError(f"the TIFF image's layout is not supported ({exc})") from None
            if pixels.ndim != len(layout.axes):
                raise ImageFileError(
                    f"the TIFF image's layout is not supported (axes {layout.axes!r})"
                )
            _check_chunks(pixels, layout.header)
        yield TiffBands(layout.header, layout, pixels)


def _has_fileno(file: BinaryIO) -> bool:
    try:
        file.fileno()
    except (OSError, AttributeError, ValueError):
        return False
    return True


# One strip or tile larger than this would be decoded whole for every band that touches it.
MAX_SEGMENT_BYTES = 256 * 1024**2


def _check_chunks(pixels: Any, header: ImageHeader) -> None:
    chunk_bytes = math.prod(pixels.chunks) * np.dtype(pixels.dtype).itemsize
    if chunk_bytes > MAX_SEGMENT_BYTES:
        raise ImageFileError(
            f"the TIFF image of {header.width} x {header.height} pixels is compressed in "
            f"strips or tiles of {chunk_bytes:,} bytes; an image this large must be written "
            "in tiles (e.g. tifffile.imwrite(path, data, tile=(512, 512))) or strips of at "
            "most 256 MB"
        )


__all__ = ["TiffBands", "open_bands"]
