"""Image files to pixels: PNG, JPEG, TIFF and OME-TIFF (DESIGN.md Sec. 9).

``read_header`` reads what a file declares (size, channels, type) without decoding pixels, so
a caller can refuse a decompression bomb before it costs memory; ``decode`` then reads every
pixel and fails on a truncated or corrupt file. A photo (8-bit grey or colour: PNG, JPEG, an
RGB TIFF) decodes to an H x W or H x W x 3 uint8 array as before; anything else (16-bit, float,
2 to 16 measured channels) to a ``Multichannel`` whose channels are scaled one by one.

TIFF layouts taken: one image of Y and X with at most one channel axis (OME's or ImageJ's
``C``, or samples ``S``), after axes of length 1 are dropped. A stack (planes along Z, T or an
unnamed axis) or a file of several images is refused with the reason: it is a collection of
images, not one.
"""

from __future__ import annotations

import io
import logging
import math
import struct
import threading
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import tifffile
import zarr
from numpy.typing import NDArray
from PIL import Image, UnidentifiedImageError

from app.engine.image.channels import MAX_CHANNELS, Multichannel

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
TIFF_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF
# Pillow modes of a photo: decoded as 8-bit grey or RGB (alpha and palettes flattened).
_GREY_PHOTO_MODES = {"1", "L", "LA", "La"}
_COLOUR_PHOTO_MODES = {"P", "PA", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "HSV"}
# Pillow modes of one measured channel (16- and 32-bit integers, 32-bit float).
_CHANNEL_MODES = {"I", "I;16", "I;16B", "I;16L", "I;16N", "F"}
_CHANNEL_AXES = "CS"


Pixels = NDArray[np.uint8] | Multichannel


class ImageFileError(ValueError):
    """The file cannot be read as an image we take; the message says why."""


@dataclass(frozen=True)
class ImageHeader:
    format: str  # PNG, JPEG or TIFF
    width: int
    height: int
    channels: int
    dtype: str  # of the decoded pixels, e.g. uint8, uint16, float32
    photo: bool  # 8-bit grey or colour: decoded as such, colour spaces apply
    channel_names: tuple[str, ...]
    mode: str  # a short description for people: "RGB", "L", "3 x uint16"

    @property
    def decoded_bytes(self) -> int:
        return self.width * self.height * self.channels * np.dtype(self.dtype).itemsize


def file_format(head: bytes) -> str | None:
    """PNG, JPEG or TIFF from a file's first bytes; None for anything else."""
    if head.startswith(PNG_MAGIC):
        return "PNG"
    if head.startswith(JPEG_MAGIC):
        return "JPEG"
    if head.startswith(TIFF_MAGICS):
        return "TIFF"
    return None


def read_header(data: bytes) -> ImageHeader:
    """What the file declares, without decoding its pixels."""
    declared = file_format(data[:8])
    if declared is None:
        raise ImageFileError("the file is not a PNG, JPEG or TIFF image")
    if declared == "TIFF":
        with _tiff(data) as tif:
            return _one_series(tif).header
    with _pillow(data, declared) as image:
        return _pillow_header(image, declared)


def decode(data: bytes) -> Pixels:
    """Every pixel: a photo as H x W (grey) or H x W x 3 uint8, other images as Multichannel."""
    declared = file_format(data[:8])
    if declared == "TIFF":
        with _tiff(data) as tif:
            layout = _one_series(tif)
            _check_complete(tif, len(data))
            with _strict_tifffile(declared):
                pixels = layout.series.asarray(maxworkers=1)
        try:
            return layout.arrange(pixels, layout.axes)
        except ValueError as exc:  # Multichannel's checks: NaN, inf
            raise ImageFileError(f"the TIFF image cannot be used: {exc}") from None
    if declared is None:
        raise ImageFileError("the file is not a PNG, JPEG or TIFF image")
    with _pillow(data, declared) as image:
        header = _pillow_header(image, declared)
        try:
            if header.photo:
                return np.asarray(image.convert("L" if header.channels == 1 else "RGB"))
            pixels = np.asarray(image)
        except (OSError, SyntaxError, ValueError) as exc:
            raise ImageFileError(f"the {declared} image is truncated or corrupt ({exc})") from None
    try:
        return Multichannel.of(pixels, header.channel_names)
    except ValueError as exc:  # Multichannel's checks: NaN, inf
        raise ImageFileError(f"the {declared} image cannot be used: {exc}") from None


def stack_contents(data: bytes, max_planes: int | None = None) -> list[tuple[str, ImageHeader]]:
    """The place and header of every image `decode_planes` yields, in its order, from the
    file's headers alone; a file of more than ``max_planes`` images is refused first."""
    if file_format(data[:8]) != "TIFF":
        return [("", read_header(data))]
    with _tiff(data) as tif:
        if not tif.series:
            raise ImageFileError("the TIFF file holds no image")
        _check_complete(tif, len(data))  # the pixels are not read: their places are checked
        several = len(tif.series) > 1
        layouts = [_tiff_layout(tif, series, stacks=True) for series in tif.series]
    n_planes = sum(layout.n_planes for layout in layouts)
    if max_planes is not None and n_planes > max_planes:
        raise ImageFileError(
            f"the file holds {n_planes:,} images; at most {max_planes:,} per file are accepted"
        )
    return [
        (_in_series(k, several, place), layout.header)
        for k, layout in enumerate(layouts)
        for place in layout.places()
    ]


def decode_planes(data: bytes) -> Iterator[tuple[str, Pixels]]:
    """Every image a file holds with its place in it: one for PNG, JPEG or a single-image TIFF
    (place ``""``); a stack's planes (``Z 1``, ``Z 2``, ...) and several series' images
    (``image 2``, ``image 2 Z 1``, ...) otherwise. Planes are decoded one at a time as they are
    taken: a stack is never held decoded whole (a 1 MB file can hold a gigabyte of zeros)."""
    if file_format(data[:8]) != "TIFF":
        yield "", decode(data)
        return
    with _tiff(data) as tif:
        if not tif.series:
            raise ImageFileError("the TIFF file holds no image")
        _check_complete(tif, len(data))
        several = len(tif.series) > 1
        for k, series in enumerate(tif.series):
            layout = _tiff_layout(tif, series, stacks=True)
            planes = layout.planes(_lazy_pixels(series, layout))
            while True:
                with _strict_tifffile("TIFF"):
                    try:
                        place, image = next(planes)
                    except StopIteration:
                        break
                    except ValueError as exc:  # Multichannel's checks: NaN, inf
                        raise ImageFileError(f"the TIFF image cannot be used: {exc}") from None
                yield _in_series(k, several, place), image


def _in_series(k: int, several: bool, place: str) -> str:
    prefix = f"image {k + 1}" if several else ""
    return " ".join(p for p in (prefix, place) if p)


def _lazy_pixels(series: tifffile.TiffPageSeries, layout: _TiffLayout) -> Any:
    """The series' pixels as an array read where indexed (a Zarr view of the TIFF): a stack's
    planes are decoded one by one. A single image is read whole, as before."""
    if layout.n_planes > 1:
        try:
            return zarr.open_array(series.aszarr(level=0, maxworkers=1), mode="r")
        except (ValueError, TypeError, NotImplementedError):
            pass  # a layout tifffile cannot view as Zarr: read whole, as before
    with _strict_tifffile("TIFF"):
        return series.asarray(maxworkers=1)


# --- PNG and JPEG (Pillow) ------------------------------------------------------------------


@contextmanager
def _pillow(data: bytes, declared: str) -> Iterator[Image.Image]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                yield image
    except ImageFileError:
        raise
    except Image.DecompressionBombWarning as exc:
        raise ImageFileError(f"the image is too large to decode safely ({exc})") from None
    except (OSError, SyntaxError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ImageFileError(f"the {declared} image is truncated or corrupt ({exc})") from None


def _pillow_header(image: Image.Image, declared: str) -> ImageHeader:
    mode = image.mode
    if mode in _GREY_PHOTO_MODES or mode in _COLOUR_PHOTO_MODES:
        grey = mode in _GREY_PHOTO_MODES
        return ImageHeader(
            declared, image.width, image.height, 1 if grey else 3, "uint8", True, (), mode
        )
    if mode in _CHANNEL_MODES:
        dtype = {"F": "float32", "I": "int32"}.get(mode, "uint16")
        return ImageHeader(
            declared, image.width, image.height, 1, dtype, False, ("grey",), f"1 x {dtype}"
        )
    raise ImageFileError(f"the {declared} image has pixel mode {mode!r}, which is not supported")


# --- TIFF and OME-TIFF (tifffile) ------------------------------------------------------------


@contextmanager
def _tiff(data: bytes | BinaryIO) -> Iterator[tifffile.TiffFile]:
    """The TIFF in ``data`` (bytes, or a seekable file read where needed)."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    source.seek(0)  # tifffile reads a file from where it stands
    try:
        # A name, since an unnamed temporary file (a spooled upload) has none tifffile can use.
        with _strict_tifffile("TIFF"), tifffile.TiffFile(source, name="upload.tif") as tif:
            _check_description(tif)
            yield tif
    except ImageFileError:
        raise
    except (tifffile.TiffFileError, OSError, ValueError, KeyError, IndexError, struct.error) as exc:
        raise ImageFileError(f"the TIFF image is truncated or corrupt ({exc})") from None
    except RuntimeError as exc:  # imagecodecs' decoders (DeflateError, LzwError, ...)
        raise ImageFileError(f"the TIFF image is truncated or corrupt ({exc})") from None


class _Collected(logging.Handler):
    """tifffile logs, rather than raises, some damage (a bad tag, a page past the end)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


@contextmanager
def _strict_tifffile(declared: str) -> Iterator[None]:
    logger = logging.getLogger("tifffile")
    collected = _Collected()
    logger.addHandler(collected)
    try:
        yield
    except ImageFileError:  # damage explains a strange layout better than the layout does
        if not collected.messages:
            raise
    finally:
        logger.removeHandler(collected)
    if collected.messages:
        raise ImageFileError(
            f"the {declared} image is truncated or corrupt ({collected.messages[0]})"
        )


@dataclass(frozen=True)
class _TiffLayout:
    series: tifffile.TiffPageSeries
    axes: str  # of the series as stored
    header: ImageHeader  # of one plane
    stack: tuple[tuple[str, int], ...] = ()  # the axes along which planes are stacked, sizes

    @property
    def n_planes(self) -> int:
        return math.prod(n for _, n in self.stack)

    def planes(self, pixels: Any) -> Iterator[tuple[str, Pixels]]:
        """Each plane of the stack with its place in it (``Z 3``, ``T 2 Z 1``; ``""`` when the
        series is one image)."""
        along = [self.axes.index(a) for a, _ in self.stack]
        rest = "".join(a for k, a in enumerate(self.axes) if k not in along)
        for index, place in zip(self._indices(), self.places(), strict=True):
            where: list[int | slice] = [slice(None)] * pixels.ndim
            for axis, i in zip(along, index, strict=True):
                where[axis] = i
            yield place, self.arrange(np.asarray(pixels[tuple(where)]), rest)

    def places(self) -> list[str]:
        return [
            " ".join(f"{a} {i + 1}" for (a, _), i in zip(self.stack, index, strict=True))
            for index in self._indices()
        ]

    def _indices(self) -> Iterator[tuple[int, ...]]:
        return np.ndindex(*(n for _, n in self.stack))

    def arrange(self, pixels: NDArray[np.generic], axes: str) -> Pixels:
        """Squeeze axes of length 1 and put channels first (or last for a photo)."""
        kept = [(a, n) for a, n in zip(axes, pixels.shape, strict=True) if n > 1 or a in "YX"]
        axes = "".join(a for a, _ in kept)
        squeezed = pixels.reshape([n for _, n in kept])
        channel = [axes.index(a) for a in axes if a in _CHANNEL_AXES]
        planes = np.transpose(squeezed, [*channel, axes.index("Y"), axes.index("X")])
        if planes.ndim == 2:
            planes = planes[np.newaxis]
        if self.header.photo:  # grey, or RGB(A) with its alpha dropped
            if planes.shape[0] == 1:
                return np.ascontiguousarray(planes[0])
            return np.ascontiguousarray(np.moveaxis(planes[:3], 0, 2))
        return Multichannel(np.ascontiguousarray(planes), self.header.channel_names)


def _one_series(tif: tifffile.TiffFile) -> _TiffLayout:
    if not tif.series:
        raise ImageFileError("the TIFF file holds no image")
    if len(tif.series) > 1:
        raise ImageFileError(
            f"the TIFF file holds {len(tif.series)} images, not one: upload it as a "
            "collection (POST /api/v1/projects/{id}/collections)"
        )
    return _tiff_layout(tif, tif.series[0], stacks=False)


def _tiff_layout(
    tif: tifffile.TiffFile, series: tifffile.TiffPageSeries, stacks: bool
) -> _TiffLayout:
    """How one series' pixels make images; ``stacks``: planes along Z, T or unnamed axes are
    images of a collection (else such a series is refused)."""
    sizes, channel_axis, stacked = _tiff_axes(series, stacks)
    dtype = np.dtype(series.dtype)
    if dtype.kind not in "buif":
        raise ImageFileError(f"the TIFF image holds {dtype} values; real numbers are needed")
    n_channels = next(iter(channel_axis.values()), 1)
    if n_channels > MAX_CHANNELS:
        raise ImageFileError(
            f"the TIFF image has {n_channels} channels; at most {MAX_CHANNELS} are taken"
        )
    photometric = series.keyframe.photometric
    if photometric == tifffile.PHOTOMETRIC.PALETTE:
        raise ImageFileError("the TIFF image uses a colour palette; save it as RGB or grey")
    rgb = photometric in (tifffile.PHOTOMETRIC.RGB, tifffile.PHOTOMETRIC.YCBCR)
    photo = dtype == np.uint8 and (
        n_channels == 1 or (rgb and "S" in channel_axis and n_channels in (3, 4))
    )
    if photo:
        header = _photo_header(sizes, grey=n_channels == 1)
    else:
        header = _measured_header(tif, sizes, n_channels, dtype)
    return _TiffLayout(series, series.axes, header, tuple(stacked.items()))


def _tiff_axes(
    series: tifffile.TiffPageSeries, stacks: bool
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """The series' size along each axis, its channel axis (at most one, with its size; none
    for one channel), and the axes its planes are stacked along (refused unless ``stacks``)."""
    axes, shape = series.axes, tuple(int(n) for n in series.shape)
    if "Y" not in axes or "X" not in axes:
        raise ImageFileError(f"the TIFF image has axes {axes!r}, without rows and columns (Y, X)")
    sizes = dict(zip(axes, shape, strict=True))
    extra = {a: n for a, n in sizes.items() if a not in "YX" and n > 1}
    stacked = {a: n for a, n in extra.items() if a not in _CHANNEL_AXES}
    if stacked and not stacks:
        planes = " x ".join(f"{n} along {a}" for a, n in stacked.items())
        raise ImageFileError(
            f"the TIFF file is a stack of planes ({planes}; axes {axes!r}), not one image: "
            "upload a stack as a collection (POST /api/v1/projects/{id}/collections), one "
            "image per plane. A multichannel image must name its channel axis C (OME-TIFF "
            "or ImageJ metadata, e.g. tifffile.imwrite(path, data, metadata={'axes': 'CYX'}))"
        )
    extra = {a: n for a, n in extra.items() if a not in stacked}
    if len(extra) > 1:
        raise ImageFileError(
            f"the TIFF image has two channel axes ({extra}; axes {axes!r}); store each "
            "channel as one plane (axes CYX)"
        )
    return sizes, extra, stacked


def _photo_header(sizes: dict[str, int], grey: bool) -> ImageHeader:
    """A photo's plane: 8-bit grey or RGB (an alpha channel is dropped)."""
    return ImageHeader(
        "TIFF",
        sizes["X"],
        sizes["Y"],
        1 if grey else 3,
        "uint8",
        True,
        (),
        "L" if grey else "RGB",
    )


def _measured_header(
    tif: tifffile.TiffFile, sizes: dict[str, int], n_channels: int, dtype: np.dtype
) -> ImageHeader:
    """A plane of measured channels, named from the OME metadata where it names them."""
    names = _channel_names(tif, n_channels)
    return ImageHeader(
        "TIFF",
        sizes["X"],
        sizes["Y"],
        n_channels,
        dtype.name,
        False,
        names,
        f"{n_channels} x {dtype.name}",
    )


# The image description (where OME-XML lives) is parsed whole before a pixel is read: a
# 16 MB one took 25 s and 800 MB. An OME-XML of a few thousand planes is a few hundred kB.
MAX_DESCRIPTION_BYTES = 2 * 1024**2


def _check_description(tif: tifffile.TiffFile) -> None:
    """The first page's description (OME-XML, ImageJ's) within MAX_DESCRIPTION_BYTES, checked
    before anything parses it."""
    first = tif.pages[0]  # a TiffPage: the first page is always read whole
    tag = first.tags.get(270) if isinstance(first, tifffile.TiffPage) else None
    if tag is not None and tag.count > MAX_DESCRIPTION_BYTES:
        raise ImageFileError(
            f"the TIFF image's description (its OME-XML metadata) has {tag.count:,} bytes; at "
            f"most {MAX_DESCRIPTION_BYTES:,} are read"
        )


def _check_complete(tif: tifffile.TiffFile, size: int) -> None:
    """Every strip or tile of every page lies inside the file (tifffile would read a short
    one as zeros), and most are there at all: a sparse TIFF (tiles left out, read as zeros) of
    a few kB can declare a slide of hundreds of megapixels, every one of them made up."""
    frames, tif.pages.useframes = tif.pages.useframes, True  # offsets only: a stack's 1,000
    try:  # pages are read as light frames, not parsed whole
        pages = list(tif.pages)
    finally:
        tif.pages.useframes = frames
    for page in pages:
        if not isinstance(page, tifffile.TiffPage | tifffile.TiffFrame):
            continue
        ends = [o + n for o, n in zip(page.dataoffsets, page.databytecounts, strict=True)]
        if ends and max(ends) > size:
            raise ImageFileError(
                f"the TIFF image is truncated: its pixels run to byte {max(ends):,} of a "
                f"{size:,}-byte file"
            )
        absent = sum(1 for n in page.databytecounts if n == 0)
        if absent * 2 > len(page.databytecounts):
            kind = "tiles" if page.keyframe is not None and page.keyframe.is_tiled else "strips"
            raise ImageFileError(
                f"the TIFF image is sparse: {absent:,} of its {len(page.databytecounts):,} "
                f"{kind} hold no data (their pixels would be made up); write every {kind[:-1]}"
            )


def _channel_names(tif: tifffile.TiffFile, n_channels: int) -> tuple[str, ...]:
    """OME's channel names when it gives one per channel, distinct; else channel 1, 2, ..."""
    default = tuple(f"channel {k + 1}" for k in range(n_channels))
    if not tif.is_ome or not tif.ome_metadata:
        return default
    try:
        root = ET.fromstring(tif.ome_metadata)
    except ET.ParseError:
        return default
    pixels = next((e for e in root.iter() if e.tag.endswith("}Pixels")), None)
    if pixels is None:
        return default
    names = tuple((e.get("Name") or "").strip() for e in pixels if e.tag.endswith("}Channel"))
    if len(names) != n_channels or len(set(names)) != n_channels or not all(names):
        return default
    return names
