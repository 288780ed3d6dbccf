"""Featurization block by block, so a large picture costs memory per block, not per picture
(DESIGN.md Sec. 9 and 12).

The channels are cut into blocks of about ``block`` x ``block`` pixels; each block is read
with a halo of ``filter_reach(recipe)`` pixels on every side that has a neighbour (at the
picture's own edges there is no halo, so every filter meets the same edge it meets on the whole
picture). A filter's value at a pixel depends only on pixels within its reach, so each block's
maps, cropped to the block, equal the whole picture's there (up to float rounding: scipy's box
filter keeps a running sum).

Pixel items: pass 1 merges each block's per-map count, mean and squared deviations (Chan et al.)
and takes the fixed PCA sample's rows that fall in it; pass 2 projects each block. The fitted
reduction is the one the whole picture gives, up to that rounding.

Superpixel items: SLIC runs per block on values scaled as on the whole picture, its
compactness adjusted for SLIC's own rescaling of each input to 0..1; a piece along a block's
edge is then joined to the piece across it when the two look alike (``seam_stitch.py``), and
ids are numbered block after block. Each superpixel's mean and spread of every map are exact:
a piece's are, and a joined pair's are pooled from its two pieces'.

Blocks run on a few local threads, or, when the featurization itself runs as a task on a Dask
cluster (the Dask executor) with more threads than those, as tasks spread over the cluster's
workers (``Blocks.map``).
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from skimage import color
from skimage.segmentation import slic

from app.engine.core.daemon_pool import DaemonPool
from app.engine.image._filter_bank import Float32Array, map_groups
from app.engine.image._reduction import FittedReduction
from app.engine.image.item_moments import map_moments
from app.engine.image.seam_stitch import BlockPieces, SeamStitcher
from app.engine.image.superpixel_count import default_superpixels

Int32Array = NDArray[np.int32]
T = TypeVar("T")

BLOCK = 2048
LOCAL_THREADS = max(1, min(4, os.cpu_count() or 1))  # blocks at once on this machine
GAUSSIAN_TRUNCATE = 4.0  # skimage.filters.gaussian's default: its kernel's radius is 4 sigma
# SLIC's own Gaussian pre-smoothing (pixels): on a noisy image, unsmoothed SLIC fragments every
# superpixel and its connectivity step then merges the fragments into one region per image.
SLIC_SMOOTHING = 1.0


def filter_reach(
    filters: tuple[str, ...], sigmas: tuple[float, ...], energy_window: float, window: int
) -> int:
    """How far, in pixels, the widest map looks: a pixel's raw maps depend on no pixel
    further away than this (on either axis)."""
    reach = window // 2
    if not filters:
        return reach
    # Sobel looks 1 pixel away, the Hessian's two finite differences 2.
    derivative = 2 if "texture" in filters else 1 if "edges" in filters else 0
    for sigma in sigmas:
        smoothing = int(GAUSSIAN_TRUNCATE * sigma + 0.5)
        # local_mean: three box passes of half-width round(w * sigma).
        energy = 3 * round(energy_window * sigma) if energy_window and derivative else 0
        reach = max(reach, smoothing + derivative + energy)
    return reach


@dataclass(frozen=True)
class MapRecipe:
    """What ``map_groups`` needs: the raw maps of one image."""

    filters: tuple[str, ...]
    sigmas: tuple[float, ...]
    energy_window: float
    window: int

    @property
    def reach(self) -> int:
        return filter_reach(self.filters, self.sigmas, self.energy_window, self.window)

    def cropped_groups(self, window: Float32Array, crop: _Crop) -> Iterator[Float32Array]:
        """The block's raw maps as (g, h * w) groups, computed on the window, cropped."""
        _, height, width = window.shape
        for group in map_groups(window, self.filters, self.sigmas, self.energy_window, self.window):
            maps = group.reshape(group.shape[0], height, width)
            yield np.ascontiguousarray(crop.of(maps)).reshape(group.shape[0], -1)


@dataclass(frozen=True)
class _Crop:
    """Where a block lies in its window, and in the picture."""

    top: int  # rows of halo above the block in its window
    left: int
    row: int  # the block's first row in the picture
    col: int
    height: int
    width: int

    def of(self, maps: NDArray[np.generic]) -> NDArray[np.generic]:
        return maps[..., self.top : self.top + self.height, self.left : self.left + self.width]

    def in_picture(self) -> tuple[slice, slice]:
        return slice(self.row, self.row + self.height), slice(self.col, self.col + self.width)


def even_chunks(size: int, block: int) -> tuple[int, ...]:
    """``size`` cut into near-equal parts of ``block`` to 2 * ``block`` (a picture smaller than
    a block is one part): no sliver at the end, so every part is wider than the halo whenever
    ``block`` is."""
    n = max(1, size // block)
    edges = np.linspace(0, size, n + 1).round().astype(int)
    return tuple(int(d) for d in np.diff(edges))


def _window_of(size: int, start: int, length: int, halo: int) -> tuple[int, int]:
    """The rows (or columns) of a block's window: the block and up to ``halo`` beyond it on
    each side, cut at the picture's edges (no padding: the edge is the picture's own)."""
    return max(0, start - halo), min(size, start + length + halo)


Reader = Callable[[slice, slice], NDArray[np.float32]]  # (rows, columns) -> (C, h, w)


class Blocks:
    """The picture's channels (C, H, W) float32 in halo'd blocks, read through ``read(rows,
    columns)``: slices of an array in memory (``of_array``), or of a slide in the array store.

    ``map`` runs a function on every block in block order: on a few local threads, or, called
    from inside a task of a Dask cluster with more threads than those (a featurization job on
    the Dask executor), as tasks spread over the cluster, each block's window sent to a worker
    with its task. The function and its arguments must then pickle, so block work is
    module-level and gets what it needs as arguments, never the whole picture."""

    def __init__(self, read: Reader, shape: tuple[int, int], maps: MapRecipe, block: int):
        height, width = shape
        self.read = read
        self.maps = maps
        self.halo = maps.reach
        side = max(block, self.halo + 1)
        self.shape = (height, width)
        self.crops: list[_Crop] = []
        row = 0
        for h in even_chunks(height, side):
            col = 0
            for w in even_chunks(width, side):
                top = row - _window_of(height, row, h, self.halo)[0]
                left = col - _window_of(width, col, w, self.halo)[0]
                self.crops.append(_Crop(top, left, row, col, h, w))
                col += w
            row += h

    @classmethod
    def of_array(cls, channels: NDArray[np.float32], maps: MapRecipe, block: int) -> Blocks:
        _, height, width = channels.shape
        return cls(lambda rows, cols: channels[:, rows, cols], (height, width), maps, block)

    def __len__(self) -> int:
        return len(self.crops)

    def window(self, crop: _Crop) -> Float32Array:
        """The block with its halo (``crop.top`` / ``crop.left`` of it before the block)."""
        height, width = self.shape
        rows = slice(crop.row - crop.top, min(height, crop.row + crop.height + self.halo))
        cols = slice(crop.col - crop.left, min(width, crop.col + crop.width + self.halo))
        return np.ascontiguousarray(self.read(rows, cols), dtype=np.float32)

    def map(
        self,
        work: Callable[..., T],
        arguments: Callable[[_Crop], tuple[object, ...]] = lambda crop: (),
        progress: Callable[[], None] | None = None,
    ) -> Iterator[T]:
        """``work(window, crop, *arguments(crop))`` for every block, yielded in block order;
        a few blocks ahead at a time, so memory holds that many windows and results, not the
        picture's maps."""
        threads = _cluster_threads()
        if threads > LOCAL_THREADS:
            from distributed import worker_client

            # The job's thread goes back to its worker while it waits for the blocks.
            with worker_client() as client:
                workers = itertools.cycle(sorted(client.scheduler_info()["workers"]))

                def submit(fn: Callable[..., T], *args: object) -> Any:
                    # A block's pixels go to a worker as data (not inside the task's
                    # description), the workers in turn: a scatter left to itself puts every
                    # block on the same worker, and its tasks follow their data.
                    worker = [next(workers)]
                    sent = [
                        client.scatter(a, workers=worker, hash=False) if _large(a) else a
                        for a in args
                    ]
                    return client.submit(fn, *sent, pure=False)

                # Two blocks per worker thread in flight, so none waits for its next.
                yield from self._map(submit, 2 * threads, work, arguments, progress)
            return
        with DaemonPool(LOCAL_THREADS, "blocks") as pool:
            yield from self._map(pool.submit, LOCAL_THREADS, work, arguments, progress)

    def _map(
        self,
        submit: Callable[..., Any],
        ahead: int,
        work: Callable[..., T],
        arguments: Callable[[_Crop], tuple[object, ...]],
        progress: Callable[[], None] | None,
    ) -> Iterator[T]:
        pending: deque[Any] = deque()
        queued = 0
        for _ in self.crops:
            while queued < len(self.crops) and len(pending) < ahead:
                crop = self.crops[queued]
                pending.append(submit(work, self.window(crop), crop, *arguments(crop)))
                queued += 1
            result = pending.popleft().result()
            if progress is not None:
                progress()
            yield result


def _cluster_threads() -> int:
    """The threads of the Dask cluster this code runs in as a task on one of its workers; 0
    elsewhere. Blocks go to the cluster only when it has more than the local ones: sending them
    to other processes on the same cores costs more than it gives (a 16.8 MP picture on one
    2-core machine: 49.6 s on local threads, 56.0 s over two 1-thread workers;
    bench_featurize_cluster)."""
    try:
        from distributed import get_client, get_worker
    except ImportError:  # pragma: no cover - distributed ships with the app
        return 0
    try:
        get_worker()
    except ValueError:  # not inside a worker's task
        return 0
    return int(sum(get_client().nthreads().values()))


def _large(value: object) -> bool:
    return isinstance(value, np.ndarray) and value.nbytes > 1 << 20


# --- Pixel items ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Moments:
    """Per raw map over some pixels: count, mean and sum of squared deviations."""

    count: int
    mean: NDArray[np.float64]
    m2: NDArray[np.float64]

    def merged(self, other: Moments) -> Moments:
        """Chan, Golub & LeVeque's pairwise update: exact, and stable where E[x^2] - E[x]^2
        would cancel."""
        if self.count == 0:
            return other
        total = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / total)
        m2 = self.m2 + other.m2 + delta**2 * (self.count * other.count / total)
        return Moments(total, mean, m2)

    @property
    def std(self) -> NDArray[np.float64]:
        return np.sqrt(self.m2 / max(self.count, 1))


def _block_statistics(
    window: Float32Array, crop: _Crop, maps: MapRecipe, local: NDArray[np.intp]
) -> tuple[Moments, Float32Array]:
    """A block's moments of every raw map, and the rows of its sample pixels (``local``: their
    raster indices in the block)."""
    means, m2s, rows = [], [], []
    for group in maps.cropped_groups(window, crop):
        mean = group.mean(axis=1, dtype=np.float64)
        means.append(mean)
        m2s.append(np.square(group - mean[:, None]).sum(axis=1))
        rows.append(group[:, local].T)
    moments = Moments(crop.height * crop.width, np.concatenate(means), np.concatenate(m2s))
    return moments, np.concatenate(rows, axis=1)


def pixel_statistics(
    blocks: Blocks, n_raw: int, sample: NDArray[np.int64], progress: Callable[[], None]
) -> tuple[Moments, Float32Array]:
    """Pass 1: every map's moments over all pixels, and the rows of the ``sample`` pixels
    (raster indices, sorted) in that order."""
    _, width = blocks.shape
    sample_rows, sample_cols = np.divmod(sample, width)

    inside = {  # the sample's positions in each block
        crop: np.flatnonzero(
            (sample_rows >= crop.row)
            & (sample_rows < crop.row + crop.height)
            & (sample_cols >= crop.col)
            & (sample_cols < crop.col + crop.width)
        )
        for crop in blocks.crops
    }

    def arguments(crop: _Crop) -> tuple[object, ...]:
        found = inside[crop]
        local = (sample_rows[found] - crop.row) * crop.width + (sample_cols[found] - crop.col)
        return blocks.maps, local

    total = Moments(0, np.zeros(n_raw), np.zeros(n_raw))
    picked = np.empty((sample.size, n_raw), dtype=np.float32)
    results = blocks.map(_block_statistics, arguments, progress)
    for crop, (moments, rows) in zip(blocks.crops, results, strict=True):
        total = total.merged(moments)
        picked[inside[crop]] = rows
    return total, picked


def _block_features(
    window: Float32Array, crop: _Crop, maps: MapRecipe, fitted: FittedReduction
) -> Float32Array:
    return fitted.project_groups(maps.cropped_groups(window, crop), crop.height * crop.width)


def pixel_features(
    blocks: Blocks, fitted: FittedReduction, progress: Callable[[], None]
) -> Float32Array:
    """Pass 2: (H * W, n_components) float32 features in raster order."""
    height, width = blocks.shape
    out = np.empty((height, width, fitted.n_components), dtype=np.float32)
    results = blocks.map(_block_features, lambda crop: (blocks.maps, fitted), progress)
    for crop, features in zip(blocks.crops, results, strict=True):
        out[crop.in_picture()] = features.reshape(crop.height, crop.width, -1)
    return out.reshape(height * width, -1)


# --- Superpixel items ----------------------------------------------------------------------


@dataclass(frozen=True)
class SlicInput:
    """The values SLIC compares, for the whole picture: a photo's RGB (rescaled to 0..1 as SLIC
    does to a whole picture, then compared in Lab) or other channels (0..1), read by region
    (``read(rows, columns)`` -> (C, h, w))."""

    read: Reader
    scale: SlicScale

    @classmethod
    def of_array(cls, values: NDArray[np.float32], scale: SlicScale) -> SlicInput:
        return cls(lambda rows, cols: values[:, rows, cols], scale)

    def of(self, crop: _Crop) -> NDArray[np.float32]:
        rows, cols = crop.in_picture()
        return np.ascontiguousarray(self.read(rows, cols), dtype=np.float32)


@dataclass(frozen=True)
class SlicScale:
    """How SLIC compares values on a block as it would on the whole picture."""

    lab: bool
    compactness: float  # in the units SLIC would use on the whole picture
    n_segments: int | None  # for the whole picture; None: ``default_superpixels`` of it

    def compared(self, values: NDArray[np.float32]) -> NDArray[np.floating]:
        """The values SLIC compares: a photo's in Lab, others as they are."""
        if self.lab:
            return np.moveaxis(color.rgb2lab(np.moveaxis(values, 0, 2)), 2, 0)
        return values

    def superpixel_pixels(self, picture_pixels: int) -> float:
        """How many pixels a superpixel of the whole picture has on average."""
        return picture_pixels / (self.n_segments or default_superpixels(picture_pixels))

    def segments(
        self, compared: NDArray[np.floating], crop: _Crop, picture_pixels: int
    ) -> Int32Array:
        """SLIC on one block's ``compared`` values, 0-based ids, with the whole picture's
        scale."""
        spread = float(compared.max() - compared.min())
        # SLIC rescales its input to 0..1: distances in values shrink by 1 / spread, so the
        # weight of distance in space must shrink alike to keep the whole picture's balance.
        compactness = self.compactness / spread if spread > 0 else self.compactness
        wanted = crop.height * crop.width / self.superpixel_pixels(picture_pixels)
        segments = slic(
            np.moveaxis(compared, 0, 2),
            n_segments=max(1, round(wanted)),
            compactness=compactness,
            start_label=0,
            sigma=SLIC_SMOOTHING,
            channel_axis=-1,
            convert2lab=False,
        )
        _, inverse = np.unique(segments, return_inverse=True)
        return inverse.reshape(crop.height, crop.width).astype(np.int32)


def _block_superpixels(
    window: Float32Array,
    crop: _Crop,
    maps: MapRecipe,
    slic_values: NDArray[np.float32],
    scale: SlicScale,
    picture_pixels: int,
    with_std: bool,
) -> BlockPieces:
    """A block's superpixels, each one's mean (then spread) of every raw map, and what
    stitching compares of them."""
    compared = scale.compared(slic_values)
    items = scale.segments(compared, crop, picture_pixels)
    flat = items.ravel()
    n_items = int(flat.max()) + 1
    counts = np.bincount(flat, minlength=n_items).astype(np.float64)
    means, stds = [], []
    for group in maps.cropped_groups(window, crop):
        for values in group:
            mean, std = map_moments(flat, values, counts)
            means.append(mean)
            if with_std:
                stds.append(std)
    return BlockPieces.measure(items, np.stack(means + stds, axis=1), compared)


def superpixel_items(
    blocks: Blocks,
    slic_input: SlicInput,
    with_std: bool,
    progress: Callable[[], None],
) -> tuple[Int32Array, NDArray[np.float64]]:
    """The item of every pixel (H, W) and each item's mean (then spread) of every raw map,
    the blocks' superpixels stitched across their edges (``seam_stitch.py``)."""
    height, width = blocks.shape

    def arguments(crop: _Crop) -> tuple[object, ...]:
        scale = slic_input.scale
        return blocks.maps, slic_input.of(crop), scale, height * width, with_std

    stitcher = SeamStitcher(slic_input.scale.superpixel_pixels(height * width), with_std)
    item_of_pixel = np.empty((height, width), dtype=np.int32)
    rows, joins = [], []
    results = blocks.map(_block_superpixels, arguments, progress)
    for crop, pieces in zip(blocks.crops, results, strict=True):
        block = stitcher.add(crop.row, crop.col, pieces)
        item_of_pixel[crop.in_picture()] = block.ids
        rows.append(block.new_rows)
        joins.append(block.joins)
    raw = np.concatenate(rows)
    for joined in joins:
        raw[joined.into] = joined.rows
    return item_of_pixel, raw
