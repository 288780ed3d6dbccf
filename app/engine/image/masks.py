"""Label masks at full resolution: item labels to pixels, PNG in and out, and mean IoU.

``mean_iou`` scores a segmentation whose cluster ids need not be the truth's class ids: every
truth class is paired with at most one predicted cluster and every cluster with at most one
class, by the Hungarian method (``scipy.optimize.linear_sum_assignment``) on the confusion
matrix, maximising the number of pixels on which matched pairs agree. Then
``IoU(c) = |truth == c and predicted == match(c)| / |truth == c or predicted == match(c)|``,
0 for a class left without a cluster (more classes than clusters), and the score is the mean
over the classes present in the truth. Pixels whose truth is negative (void) are left out of
every count, and clusters that only cover void pixels do not exist for the score.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray
from PIL import Image, UnidentifiedImageError
from scipy.optimize import linear_sum_assignment

Int32Array = NDArray[np.int32]

_INDEX_MODES = ("1", "L", "P", "I;16", "I;16B", "I;16L", "I")
MAX_CLUSTER_ID = 65_535


def item_labels_to_mask(labels: ArrayLike, item_of_pixel: ArrayLike) -> Int32Array:
    """The H x W int32 mask whose pixel (r, c) holds ``labels[item_of_pixel[r, c]]``."""
    lab = np.asarray(labels)
    items = np.asarray(item_of_pixel)
    if lab.ndim != 1:
        raise ValueError(
            f"labels must be a 1-D array with one label per item, got shape {lab.shape}"
        )
    if items.ndim != 2 or items.size == 0:
        raise ValueError(f"item_of_pixel must be a non-empty H x W array, got shape {items.shape}")
    if lab.dtype.kind not in "iu" or items.dtype.kind not in "iu":
        raise ValueError(
            f"labels and item_of_pixel must hold integers, got {lab.dtype} and {items.dtype}"
        )
    if items.min() < 0 or items.max() >= lab.size:
        raise ValueError(
            f"item_of_pixel refers to items {items.min()}..{items.max()} but labels has "
            f"{lab.size} entries"
        )
    if lab.size and (lab.min() < np.iinfo(np.int32).min or lab.max() > np.iinfo(np.int32).max):
        raise ValueError("labels must fit in 32-bit integers")
    return lab.astype(np.int32)[items]


def encode_png(mask: ArrayLike) -> bytes:
    """A greyscale PNG whose pixel values are the cluster ids: 8-bit when every id is below 256,
    16-bit otherwise (ids must be in 0..65535)."""
    arr = np.asarray(mask)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"mask must be a non-empty H x W array, got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        raise ValueError(f"mask must hold integer cluster ids, got dtype {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high > MAX_CLUSTER_ID:
        raise ValueError(
            f"mask ids must be in 0..{MAX_CLUSTER_ID} to be stored in a PNG, got {low}..{high}"
        )
    image = Image.fromarray(arr.astype(np.uint8 if high < 256 else np.uint16))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def decode_index_png(data: bytes, shape: tuple[int, int]) -> Int32Array:
    """An H x W int32 array of class ids from a single-channel index image (a ground truth).

    Accepted modes: 1 (binary), L (8-bit grey), P (palette: the indices are the ids), I;16 and
    I (16/32-bit grey). The image must be ``shape`` = (H, W). The size is checked before the
    pixels are decoded.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ValueError(f"data must be the bytes of an image file, got {type(data).__name__}")
    height, width = shape
    try:
        image = Image.open(io.BytesIO(bytes(data)))
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"ground truth is not a readable image: {exc}") from exc
    with image:
        if image.size != (width, height):
            raise ValueError(
                f"ground truth is {image.size[0]} x {image.size[1]} pixels but the image is "
                f"{width} x {height}; they must match"
            )
        if image.mode not in _INDEX_MODES:
            raise ValueError(
                "ground truth must be a single-channel index image (PNG mode L, P, I;16 or I, "
                f"one class id per pixel), got mode {image.mode}"
            )
        try:
            pixels = np.asarray(image)
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ValueError(f"ground truth could not be decoded: {exc}") from exc
    return pixels.astype(np.int32)


def mean_iou(truth: ArrayLike, predicted: ArrayLike) -> float:
    """Mean over truth classes of the IoU with the matched cluster (module docstring)."""
    t = np.asarray(truth)
    p = np.asarray(predicted)
    if t.shape != p.shape:
        raise ValueError(f"truth and predicted must have one shape, got {t.shape} and {p.shape}")
    if t.dtype.kind not in "iu" or p.dtype.kind not in "iu":
        raise ValueError(f"truth and predicted must hold integers, got {t.dtype} and {p.dtype}")
    valid = t >= 0
    if not np.any(valid):
        raise ValueError("truth has no labeled pixels (all are negative, i.e. void)")
    classes, t_codes = np.unique(t[valid], return_inverse=True)
    _, p_codes = np.unique(p[valid], return_inverse=True)
    n_p = int(p_codes.max()) + 1
    confusion = np.bincount(t_codes * n_p + p_codes, minlength=classes.size * n_p).reshape(
        classes.size, n_p
    )
    rows, cols = linear_sum_assignment(confusion, maximize=True)
    overlap = confusion[rows, cols]
    union = confusion.sum(axis=1)[rows] + confusion.sum(axis=0)[cols] - overlap
    return float(np.sum(overlap / union) / classes.size)


def png_stream(
    width: int, height: int, bands: Iterable[NDArray[np.integer]], sixteen_bit: bool
) -> Iterator[bytes]:
    """A greyscale PNG of cluster ids written as its rows come (a slide's mask of gigapixels,
    never held whole): ``bands`` are consecutive (h, width) row blocks, top to bottom; 8-bit,
    or 16-bit when ``sixteen_bit``. The same image ``encode_png`` gives of the whole mask."""
    depth = 16 if sixteen_bit else 8
    yield b"\x89PNG\r\n\x1a\n"
    yield _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, 0, 0, 0, 0))
    packer = zlib.compressobj(6)
    dtype = np.dtype(">u2") if sixteen_bit else np.dtype(np.uint8)
    rows = 0
    for band in bands:
        values = np.asarray(band)
        if values.ndim != 2 or values.shape[1] != width:
            raise ValueError(f"bands must be (h, {width}), got {values.shape}")
        filtered = np.zeros((values.shape[0], 1 + width * dtype.itemsize), dtype=np.uint8)
        filtered[:, 1:] = values.astype(dtype).view(np.uint8).reshape(values.shape[0], -1)
        rows += values.shape[0]
        data = packer.compress(filtered.tobytes())
        if data:
            yield _png_chunk(b"IDAT", data)
    if rows != height:
        raise ValueError(f"the bands hold {rows} rows, not {height}")
    yield _png_chunk(b"IDAT", packer.flush())
    yield _png_chunk(b"IEND", b"")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)
