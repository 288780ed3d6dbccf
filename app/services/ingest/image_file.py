"""Image uploads (PNG, JPEG, TIFF, OME-TIFF), checked by decoding them fully: a truncated or
corrupt file fails here, at upload, not later in the background."""

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import tifffile
from PIL import Image

from app.engine.image.channels import Multichannel
from app.engine.image.image_file import (
    ImageFileError,
    ImageHeader,
    Pixels,
    decode,
    decode_planes,
    file_format,
    read_header,
    stack_contents,
)
from app.services.errors import InvalidInput, UnsupportedMediaType
from app.services.ingest.parsed import ParsedImage

MAX_PIXELS = 50_000_000  # the default of the IMAGE_WHOLE_PIXELS setting
# Decoded pixels of one upload's images together: what it asks of the store and of the
# featurizations it queues (a collection's planes are decoded one at a time).
MAX_DECODED_BYTES = 2 * 1024**3
MAX_PLANES_PER_FILE = 1000
# Featurization compares every pixel with its neighbours on both axes (app/engine/image).
MIN_SIDE = 2


def whole_limit(max_pixels: int, whole_pixels: int) -> tuple[int, str]:
    """The largest image decoded whole (PNG, JPEG, a collection's), and the setting that sets
    it, for the message."""
    if max_pixels <= whole_pixels:
        return max_pixels, "IMAGE_MAX_PIXELS"
    return whole_pixels, "IMAGE_WHOLE_PIXELS; a larger picture is taken as a TIFF, as a slide"


def _image_bytes(stream: BinaryIO, filename: str) -> bytes:
    """The whole upload, refused (415) unless it starts as an image file does."""
    stream.seek(0)
    data = stream.read()
    if file_format(data[:8]) is None:
        raise UnsupportedMediaType(f"{filename!r} is not a PNG, JPEG or TIFF image")
    return data


def parse_image(
    stream: BinaryIO, filename: str, max_pixels: int = MAX_PIXELS, setting: str = ""
) -> ParsedImage:
    """The whole image, decoded and checked; ``setting`` names the ``max_pixels`` limit."""
    data = _image_bytes(stream, filename)
    try:
        header = read_header(data)
        check_size(header.width, header.height, header.decoded_bytes, max_pixels, setting)
        pixels = decode(data)
    except ImageFileError as exc:
        raise InvalidInput(str(exc)) from None
    shown = pixels if isinstance(pixels, np.ndarray) else pixels.composite()
    display = None if isinstance(pixels, np.ndarray) and header.format != "TIFF" else _png(shown)
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
    )


@dataclass(frozen=True)
class CollectionFile:
    """A file of a collection, checked from its headers: the place and header of each image it
    holds. `images` decodes them one at a time, so a stack is never held decoded whole."""

    stream: BinaryIO
    filename: str
    contents: list[tuple[str, ImageHeader]]
    max_pixels: int
    setting: str

    def images(self) -> Iterator[tuple[str, ParsedImage]]:
        """Each image with its place (``""`` for a file of one image, kept byte for byte;
        ``Z 3``, ``image 2``... for a stack's planes or a file's images, each made its own
        lossless TIFF with its channel names)."""
        data = _image_bytes(self.stream, self.filename)
        if len(self.contents) == 1 and not self.contents[0][0]:
            yield "", parse_image(io.BytesIO(data), self.filename, self.max_pixels, self.setting)
            return
        try:
            for place, pixels in decode_planes(data):
                yield place, _plane(pixels)
        except ImageFileError as exc:
            raise InvalidInput(f"{self.filename!r}: {exc}") from None


def check_collection_file(
    stream: BinaryIO, filename: str, max_pixels: int = MAX_PIXELS, setting: str = ""
) -> CollectionFile:
    """What a file of a collection holds, checked from its headers without decoding pixels;
    ``setting`` names the ``max_pixels`` limit."""
    data = _image_bytes(stream, filename)
    try:
        contents = stack_contents(data, MAX_PLANES_PER_FILE)
        for _, header in contents:
            check_size(header.width, header.height, header.decoded_bytes, max_pixels, setting)
    except ImageFileError as exc:
        raise InvalidInput(f"{filename!r}: {exc}") from None
    return CollectionFile(stream, filename, contents, max_pixels, setting)


def check_decoded_budget(files: list[CollectionFile]) -> None:
    """All the images of an upload's files (every plane of every stack) together within
    MAX_DECODED_BYTES decoded, from their headers alone: a 10 MB stack could otherwise ask
    for 9 GiB of the store and of the featurizations it queues."""
    total = 0
    for file in files:
        total += sum(header.decoded_bytes for _, header in file.contents)
        if total > MAX_DECODED_BYTES:
            raise InvalidInput(
                f"the images take more than {MAX_DECODED_BYTES:,} bytes decoded together "
                f"(reached at {file.filename!r}); upload them as several collections"
            )


def _plane(pixels: Pixels) -> ParsedImage:
    """A decoded plane as its own TIFF, described from its pixels (not decoded again)."""
    if isinstance(pixels, Multichannel):
        height, width = pixels.shape
        dtype = pixels.planes.dtype.name
        shown = pixels.composite()
        return ParsedImage(
            data=_tiff(pixels),
            format="TIFF",
            width=width,
            height=height,
            mode=f"{len(pixels.names)} x {dtype}",
            dtype=dtype,
            channel_names=list(pixels.names),
            display=_png(shown),
            shown=shown,
        )
    height, width = pixels.shape[:2]
    return ParsedImage(
        data=_tiff(pixels),
        format="TIFF",
        width=width,
        height=height,
        mode="RGB" if pixels.ndim == 3 else "L",
        display=_png(pixels),
        shown=pixels,
    )


def _tiff(pixels: Pixels) -> bytes:
    """One image as a deflated TIFF: measured channels as OME-TIFF with their names."""
    out = io.BytesIO()
    if isinstance(pixels, Multichannel):
        metadata = {"axes": "CYX", "Channel": {"Name": list(pixels.names)}}
        tifffile.imwrite(out, pixels.planes, ome=True, metadata=metadata, compression="zlib")
    else:
        photometric = "rgb" if pixels.ndim == 3 else "minisblack"
        tifffile.imwrite(out, pixels, photometric=photometric, compression="zlib")
    return out.getvalue()


def check_size(
    width: int, height: int, decoded_bytes: int | None, max_pixels: int, setting: str = ""
) -> None:
    """An image's size against the limits; ``decoded_bytes`` None: it is read in bands (a
    slide), not decoded whole. ``setting``: the limit's name, for the message."""
    if width < MIN_SIDE or height < MIN_SIDE:
        raise InvalidInput(
            f"the image has {width}x{height} pixels; at least {MIN_SIDE}x{MIN_SIDE} are "
            "needed to segment it"
        )
    if width * height > max_pixels:
        raise InvalidInput(
            f"the image has {width}x{height} pixels; at most {max_pixels:,} are accepted "
            f"({setting or 'IMAGE_MAX_PIXELS'})"
        )
    if decoded_bytes is not None and decoded_bytes > MAX_DECODED_BYTES:
        raise InvalidInput(
            f"the image's pixels take {decoded_bytes:,} bytes decoded; at most "
            f"{MAX_DECODED_BYTES:,} are accepted"
        )


def _png(pixels: np.ndarray) -> bytes:
    """What a browser shows for a file it cannot (TIFF) or should not (16-bit) show as is."""
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()
