"""Raw per-pixel feature maps, produced a few at a time so no (pixels x features) matrix is built.

Two families, both per channel (DESIGN.md Sec. 9):

* multiscale filters, as ``skimage.feature.multiscale_basic_features`` computes them for one
  sigma: the Gaussian-smoothed intensity, the Sobel magnitude of that (edges) and the two
  eigenvalues of its Hessian (texture; larger first), in the order channel, sigma, filter. With
  an energy window w > 0, edges and texture become their local mean magnitude (``local_mean``
  of the absolute response over about w * sigma pixels);
* the papers' w x w window (specs/cec-ib.md Sec. 5.7, specs/ppc.md Sec. 5.7): the value of
  every pixel of the reflect-padded w x w neighbourhood, in the order channel, row offset,
  column offset.

A *group* is the maps computed together (one channel and sigma, or one channel and window row),
as a (g, H * W) float32 array; consumers reduce each group before the next is computed.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage as ndi
from skimage import color, filters
from skimage.util import img_as_float32

from app.engine.image.box_filter import box_mean_down_columns
from app.engine.image.gaussian import gaussian_blur

Float32Array = NDArray[np.float32]

FILTERS = ("intensity", "edges", "texture")
COLOUR_SPACES = ("lab", "rgb", "grey")
_MAPS_PER_FILTER = {"intensity": 1, "edges": 1, "texture": 2}
_ACCEPTED_KINDS = "buf"


def image_channels(image: ArrayLike) -> Float32Array:
    """(C, H, W) float32 channels scaled as ``img_as_float32`` does (uint8 / 255, ...).

    Grey images give one channel, RGB(A) images three; alpha is dropped (a grey-plus-alpha
    image is grey).
    """
    arr = np.asarray(image)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (2, 3, 4)):
        raise ValueError(
            "image must be H x W (grey) or H x W x C with C = 2 (grey + alpha), 3 (RGB) or "
            f"4 (RGBA), got shape {arr.shape}"
        )
    if arr.dtype.kind not in _ACCEPTED_KINDS:
        raise ValueError(
            f"image must hold bool, unsigned integer or float values, got dtype {arr.dtype}"
        )
    if arr.shape[0] < 2 or arr.shape[1] < 2:
        raise ValueError(
            f"image must be at least 2 x 2 pixels, got {arr.shape[1]} x {arr.shape[0]}"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError("image contains NaN or infinite values")
    if arr.ndim == 2 or arr.shape[2] == 2:
        plane = arr if arr.ndim == 2 else arr[:, :, 0]
        return np.array(img_as_float32(plane)[np.newaxis])
    return np.ascontiguousarray(np.moveaxis(img_as_float32(arr[:, :, :3]), 2, 0))


def in_colour_space(channels: Float32Array, space: str) -> Float32Array:
    """Channels for the features: grey images stay grey; RGB becomes CIE Lab (``"lab"``),
    stays RGB (``"rgb"``) or becomes its luminance (``"grey"``, ``rgb2gray``)."""
    if channels.shape[0] == 1 or space == "rgb":
        return channels
    rgb = np.moveaxis(channels, 0, 2)
    if space == "grey":
        return np.asarray(color.rgb2gray(rgb), dtype=np.float32)[np.newaxis]
    return np.ascontiguousarray(np.moveaxis(color.rgb2lab(rgb), 2, 0), dtype=np.float32)


def maps_per_channel(filter_names: tuple[str, ...], n_sigmas: int, window: int) -> int:
    return sum(_MAPS_PER_FILTER[f] for f in filter_names) * n_sigmas + window * window


def raw_feature_names(
    n_channels: int,
    space: str,
    filter_names: tuple[str, ...],
    sigmas: tuple[float, ...],
    energy_window: float,
    window: int,
    channel_names: tuple[str, ...] = (),
) -> list[str]:
    """Names of the raw maps in the order the groups produce them; a photo's channels are
    named by ``space`` unless ``channel_names`` are given."""
    if not channel_names:
        channel_names = {"lab": ("L", "a", "b"), "rgb": ("R", "G", "B")}.get(space, ("grey",))
        if n_channels == 1:
            channel_names = ("grey",)
    energy = f" energy w={energy_window:g}" if energy_window else ""
    per_sigma = {
        "intensity": ["intensity"],
        "edges": [f"edges{energy}"],
        "texture": [f"hessian max{energy}", f"hessian min{energy}"],
    }
    names = [
        f"{ch} {name} s={sigma:g}"
        for ch in channel_names
        for sigma in sigmas
        for f in filter_names
        for name in per_sigma[f]
    ]
    half = window // 2
    for ch in channel_names if window else []:
        names += [
            f"{ch} window dy={dy} dx={dx}"
            for dy in range(-half, half + 1)
            for dx in range(-half, half + 1)
        ]
    return names


def family_divisors(names: list[str], power: float) -> NDArray[np.float64]:
    """Per raw map, (n / n_smallest) ** (power / 2) where n counts the maps of its family
    (intensity; edges and texture; window; each again for superpixel standard deviations), so
    that with power 1 every family carries the same total variance after standardisation."""
    family = [_family(name) for name in names]
    _, index, counts = np.unique(family, return_inverse=True, return_counts=True)
    return np.asarray((counts / counts.min()) ** (power / 2), dtype=np.float64)[index]


def _family(name: str) -> str:
    spread = " std" if name.endswith(" std") else ""
    kind = next((k for k in ("intensity", "window") if f" {k}" in name), "structure")
    return kind + spread


def _filter_group(
    plane: Float32Array, sigma: float, filter_names: tuple[str, ...], energy_window: float
) -> Float32Array:
    smoothed = gaussian_blur(plane, sigma)  # skimage.filters.gaussian to the bit, faster
    maps = []
    if "intensity" in filter_names:
        maps.append(smoothed)
    if "edges" in filter_names:
        maps.append(filters.sobel(smoothed))
    if "texture" in filter_names:
        # The Hessian of the smoothed plane by finite differences, as skimage does; the
        # eigenvalues of [[a, b], [b, c]] in closed form, larger first.
        d_row, d_col = np.gradient(smoothed)
        a = np.gradient(d_row, axis=0)
        b = np.gradient(d_row, axis=1)
        c = np.gradient(d_col, axis=1)
        mid = (a + c) / 2
        radius = np.sqrt(((a - c) / 2) ** 2 + b * b)
        maps += [mid + radius, mid - radius]
    if energy_window:
        start = 1 if "intensity" in filter_names else 0
        maps[start:] = [local_mean(np.abs(m), energy_window * sigma) for m in maps[start:]]
    return np.stack([m.ravel() for m in maps]).astype(np.float32, copy=False)


def local_mean(values: Float32Array, scale: float) -> Float32Array:
    """Three passes of a (2 round(scale) + 1)-wide box: close to a Gaussian of std ``scale``,
    at a cost that does not grow with it."""
    radius = round(scale)
    for _ in range(3):
        # Down the columns with a running sum over whole rows (scipy's own pass along axis 0
        # was 5x slower than along axis 1), then along the rows with scipy.
        down = box_mean_down_columns(values, radius)
        values = ndi.uniform_filter1d(down, size=2 * radius + 1, axis=1, mode="reflect")
    return values


def _window_groups(plane: Float32Array, window: int) -> Iterator[Float32Array]:
    height, width = plane.shape
    half = window // 2
    padded = np.pad(plane, half, mode="reflect")
    for dy in range(window):
        rows = padded[dy : dy + height]
        yield np.stack([rows[:, dx : dx + width].ravel() for dx in range(window)])


def map_groups(
    channels: Float32Array,
    filter_names: tuple[str, ...],
    sigmas: tuple[float, ...],
    energy_window: float,
    window: int,
) -> Iterator[Float32Array]:
    """The raw maps as (g, H * W) float32 groups, in ``raw_feature_names`` order."""
    if filter_names:
        for plane in channels:
            for sigma in sigmas:
                yield _filter_group(plane, sigma, filter_names, energy_window)
    if window:
        for plane in channels:
            yield from _window_groups(plane, window)


def n_groups(n_channels: int, filter_names: tuple[str, ...], n_sigmas: int, window: int) -> int:
    return n_channels * ((n_sigmas if filter_names else 0) + window)
