"""PNG and JPEG images, checked by decoding them fully (a truncated file fails here)."""

import io
import warnings
from typing import BinaryIO

from PIL import Image, UnidentifiedImageError

from app.services.errors import InvalidInput, UnsupportedMediaType
from app.services.ingest.parsed import ParsedImage

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
MAX_PIXELS = 50_000_000
# Featurization compares every pixel with its neighbours on both axes (app/engine/image).
MIN_SIDE = 2


def image_format(head: bytes) -> str | None:
    if head.startswith(PNG_MAGIC):
        return "PNG"
    if head.startswith(JPEG_MAGIC):
        return "JPEG"
    return None


def parse_image(stream: BinaryIO, filename: str) -> ParsedImage:
    stream.seek(0)
    data = stream.read()
    declared = image_format(data[:8])
    if declared is None:
        raise UnsupportedMediaType(f"{filename!r} is not a PNG or JPEG image")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height, mode = image.width, image.height, image.mode
                if width < MIN_SIDE or height < MIN_SIDE:
                    raise InvalidInput(
                        f"the image has {width}x{height} pixels; at least "
                        f"{MIN_SIDE}x{MIN_SIDE} are needed to segment it"
                    )
                if width * height > MAX_PIXELS:
                    raise InvalidInput(
                        f"the image has {width}x{height} pixels; "
                        f"at most {MAX_PIXELS:,} are accepted"
                    )
                image.load()  # decodes every byte: truncation and corruption surface here
    except InvalidInput:
        raise
    except (OSError, SyntaxError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise InvalidInput(f"the {declared} image is truncated or corrupt ({exc})") from None
    except Image.DecompressionBombWarning as exc:
        raise InvalidInput(f"the image is too large to decode safely ({exc})") from None
    return ParsedImage(data=data, format=declared, width=width, height=height, mode=mode)
