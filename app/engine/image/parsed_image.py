"""An image file made ready to store: the file to keep, a PNG for the browser when the file is
not one it shows well, and what the viewer's pyramid is made from. One file of a collection
can hold many images (a stack's planes); each becomes a `ParsedImage` of its own."""

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tifffile
from numpy.typing import NDArray
from PIL import Image

from app.engine.image.channels import Multichannel
from app.engine.image.image_file import (
    ImageHeader,
    Pixels,
    decode,
    decode_planes,
    file_format,
    read_header,
)


@dataclass(frozen=True)
class ParsedImage:
    data: bytes  # the file as uploaded
    format: str  # PNG, JPEG or TIFF
    width: int
    height: int
    mode: str  # RGB or L for a photo, else channels x dtype ("4 x uint16")
    dtype: str = "uint8"  # of the decoded pixels
    channel_names: list[str] = field(default_factory=list)  # measured channels; [] for a photo
    display: bytes | None = None  # a PNG the browser shows when the file itself will not do
    # What the browser shows, decoded (H x W or H x W x 3 uint8): the tiled viewer's pyramid
    # is made from it at upload. None: decoded again from the stored file when needed.
    shown: NDArray[np.uint8] | None = field(default=None, repr=False, compare=False)
    # Measured channels: each one's robust range and extremes (C x 2), for their display.
    ranges: list[list[float]] | None = None
    extremes: list[list[float]] | None = None

    def meta(self) -> dict[str, Any]:
        """What a dataset's ``meta.image`` says of it."""
        return {
            "format": self.format,
            "width": self.width,
            "height": self.height,
            "mode": self.mode,
            "dtype": self.dtype,
            "channels": self.channel_names,
            "bytes": len(self.data),
            **({"ranges": self.ranges, "extremes": self.extremes} if self.ranges else {}),
        }


def whole_image(data: bytes, header: ImageHeader | None = None) -> ParsedImage:
    """A file of one image, decoded (raises ImageFileError), kept byte for byte."""
    header = header or read_header(data)
    pixels = decode(data)
    shown = pixels if isinstance(pixels, np.ndarray) else pixels.composite()
    display = None if isinstance(pixels, np.ndarray) and header.format != "TIFF" else png(shown)
    return ParsedImage(
        data=data,
        format=header.format,
        width=header.width,
        height=header.height,
        mode=header.mode,
        dtype=header.dtype,
        channel_names=list(header.channel_names),
        display=display,
        shown=shown,
        **_channel_ranges(pixels),
    )


def _channel_ranges(pixels: Pixels) -> dict[str, list[list[float]]]:
    if not isinstance(pixels, Multichannel):
        return {}
    flat = pixels.planes.reshape(pixels.planes.shape[0], -1)
    extremes = np.stack([flat.min(axis=1), flat.max(axis=1)], axis=1).astype(np.float64)
    return {"ranges": pixels.ranges().tolist(), "extremes": extremes.tolist()}


def file_images(data: bytes, single: bool) -> Iterator[tuple[str, ParsedImage]]:
    """Each image of a file with its place in it, one decoded at a time: ``single`` (the file
    holds one image, place ``""``): the file itself; else each plane (``Z 3``, ``image 2``...)
    made its own lossless TIFF with its channel names. Raises ImageFileError."""
    if single:
        yield "", whole_image(data)
        return
    for place, pixels in decode_planes(data):
        yield place, plane_image(pixels)


def is_single(contents: list[tuple[str, ImageHeader]]) -> bool:
    """Whether a file's contents (`stack_contents`) are one image kept as it is."""
    return len(contents) == 1 and not contents[0][0]


def needs_pixel_check(data: bytes, contents: list[tuple[str, ImageHeader]]) -> bool:
    """Whether a file must be decoded before it is accepted. A TIFF of integer pixels holds
    nothing its headers do not vouch for (every strip's place is checked against the file's
    size); floats can hold NaN or infinities, and PNG and JPEG declare no strip sizes."""
    if file_format(data[:8]) != "TIFF":
        return True
    return any(np.dtype(header.dtype).kind == "f" for _, header in contents)


def plane_image(pixels: Pixels) -> ParsedImage:
    """A decoded plane as its own TIFF, described from its pixels (not decoded again)."""
    if isinstance(pixels, Multichannel):
        height, width = pixels.shape
        dtype = pixels.planes.dtype.name
        shown = pixels.composite()
        return ParsedImage(
            data=tiff(pixels),
            format="TIFF",
            width=width,
            height=height,
            mode=f"{len(pixels.names)} x {dtype}",
            dtype=dtype,
            channel_names=list(pixels.names),
            display=png(shown),
            shown=shown,
            **_channel_ranges(pixels),
        )
    height, width = pixels.shape[:2]
    return ParsedImage(
        data=tiff(pixels),
        format="TIFF",
        width=width,
        height=height,
        mode="RGB" if pixels.ndim == 3 else "L",
        display=png(pixels),
        shown=pixels,
    )


def tiff(pixels: Pixels) -> bytes:
    """One image as a deflated TIFF: measured channels as OME-TIFF with their names."""
    out = io.BytesIO()
    if isinstance(pixels, Multichannel):
        metadata = {"axes": "CYX", "Channel": {"Name": list(pixels.names)}}
        tifffile.imwrite(out, pixels.planes, ome=True, metadata=metadata, compression="zlib")
    else:
        photometric = "rgb" if pixels.ndim == 3 else "minisblack"
        tifffile.imwrite(out, pixels, photometric=photometric, compression="zlib")
    return out.getvalue()


def png(pixels: np.ndarray) -> bytes:
    """What a browser shows for a file it cannot (TIFF) or should not (16-bit) show as is."""
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()
