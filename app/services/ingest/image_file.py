"""Image uploads (PNG, JPEG, TIFF, OME-TIFF), checked at upload, not later in the background: a
picture by decoding it fully; a collection's files from their headers (a TIFF of integers) or
by decoding them one image at a time (floats, PNG, JPEG)."""

from dataclasses import dataclass
from typing import BinaryIO

from app.engine.image.image_file import (
    ImageFileError,
    ImageHeader,
    file_format,
    read_header,
    stack_contents,
)
from app.engine.image.parsed_image import (
    ParsedImage,
    file_images,
    is_single,
    needs_pixel_check,
    whole_image,
)
from app.services.errors import InvalidInput, UnsupportedMediaType

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
        return whole_image(data, header)
    except ImageFileError as exc:
        raise InvalidInput(str(exc)) from None


@dataclass(frozen=True)
class CollectionFile:
    """A file of a collection, checked from its headers: the place and header of each image it
    holds, and the file's bytes (``data``), kept until they are stored."""

    filename: str
    data: bytes
    contents: list[tuple[str, ImageHeader]]

    def check_pixels(self) -> None:
        """Decode the images one at a time where the headers cannot vouch for the pixels
        (`needs_pixel_check`): a NaN or a broken PNG is refused before anything is stored."""
        if not needs_pixel_check(self.data, self.contents):
            return
        try:
            for _ in file_images(self.data, is_single(self.contents)):
                pass
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
    return CollectionFile(filename, data, contents)


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
