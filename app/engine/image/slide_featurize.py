"""Featurize a slide: a picture read by region (from the array store), never held whole.

The blocks, their halos, SLIC per block and each superpixel's means and spreads are those of
``blockwise.py``, stitched across the blocks' edges by the same ``SeamStitcher``, so a slide's
items and raw rows are those ``featurize`` gives the same picture in memory with the same block
size. What differs is where things go:

* each block's items go to ``write_items`` as they come, with their final ids (the map of
  pixels to items of a 50k x 50k slide is 10 GB of int32);
* the raw rows go to a spill file (the row of an item a later piece joined is replaced) and
  are read back to be projected; the reduction's means and scales come from every superpixel
  (merged moments of the rows read back), its PCA from all of them up to
  ``PCA_SAMPLE`` rows, from a fixed-seed sample above (as pixel items are handled);
* what code downstream needs of the map without reading it is gathered per block: each item's
  pixel count and bounding box, and the pairs of items that touch with the length of their
  shared border (within a block from its items; across blocks from the blocks' edge rows and
  columns), equal to ``region_links.region_adjacency`` of the whole map.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import ndimage as ndi
from skimage.util import img_as_float32

from app.engine.image._filter_bank import (
    Float32Array,
    family_divisors,
    image_channels,
    in_colour_space,
    raw_feature_names,
)
from app.engine.image._reduction import FittedReduction, fit_pca, standardiser
from app.engine.image.blockwise import (
    Blocks,
    MapRecipe,
    Moments,
    SlicInput,
    SlicScale,
    _block_superpixels,
    _Crop,
)
from app.engine.image.featurize import (
    PCA_SAMPLE,
    Recipe,
    _block_side,
    _pca_sample,
    chosen_channels,
)
from app.engine.image.float32_safe import within_float32
from app.engine.image.seam_stitch import BlockPieces, SeamStitcher
from app.engine.progress import ShareDone

Int32Array = NDArray[np.int32]
Int64Array = NDArray[np.int64]
SPILL_ROWS = 65_536  # raw rows read back at once
MOMENT_ROWS = 8_192  # of those, taken into the reduction's means and scales at once
# A slide is always cut into blocks of about this side, smaller than a whole picture's (BLOCK):
# a block's SLIC and maps peak on every local thread at once, and a slide's server must stay
# under 3 GiB whatever the slide's size. In 2,048-pixel blocks (2,642-pixel windows with the
# default recipe's halo) a 6,000 x 6,000 4-channel slide peaked at 3.2 GiB on 2 threads; in
# 1,536-pixel blocks a 7,700 x 7,700 one at 2.0 GiB (bench_image --part scale), for about 15 %
# more halo computed.
SLIDE_BLOCK = 1536


@dataclass(frozen=True, eq=False)
class StoredPicture:
    """A slide as its reader sees it.

    * ``read(rows, columns)``: pixels (h, w, C) in the file's dtype (C = 3 or 1 for a photo);
    * ``photo``: 8-bit grey or RGB, featurized in the recipe's colour space; else measured
      channels, each scaled by its robust ``ranges`` (C, 2) as ``Multichannel.scaled`` does;
    * ``extremes``: (C, 2) each channel's minimum and maximum over the slide (SLIC's scale).
    """

    shape: tuple[int, int]
    read: Callable[[slice, slice], NDArray[np.generic]]
    photo: bool
    channel_names: tuple[str, ...]
    extremes: NDArray[np.float64]
    ranges: NDArray[np.float64] | None = None

    def colour(self, rows: slice, cols: slice) -> Float32Array:
        """(C, h, w) as scaled for SLIC: a photo's RGB or grey in 0..1; measured channels
        mapped by their ranges."""
        return self._scaled(self.read(rows, cols))

    def _scaled(self, pixels: NDArray[np.generic]) -> Float32Array:
        if self.photo:
            return image_channels(pixels)
        assert self.ranges is not None
        planes = np.moveaxis(pixels, 2, 0)
        out = np.empty(planes.shape, dtype=np.float32)
        for k, (low, high) in enumerate(self.ranges):
            plane, low, high = within_float32(planes[k], low, high)
            np.subtract(plane, low, out=out[k], casting="unsafe")
            out[k] /= np.float32(high - low)
        return out

    def chosen(self, kept: list[int]) -> StoredPicture:
        """The same slide with only the channels ``kept`` (indices, in order)."""
        if len(kept) == len(self.channel_names):
            return self
        read = self.read

        def channels(rows: slice, cols: slice) -> NDArray[np.generic]:
            return read(rows, cols)[:, :, kept]

        return StoredPicture(
            shape=self.shape,
            read=channels,
            photo=self.photo,
            channel_names=tuple(self.channel_names[k] for k in kept),
            extremes=self.extremes[kept],
            ranges=None if self.ranges is None else self.ranges[kept],
        )

    def colour_range(self) -> tuple[float, float]:
        """The least and greatest value of ``colour`` over the slide (clipped to 0..1 for
        measured channels, as SLIC gets them): each channel's extremes, scaled."""
        if self.photo:
            values = img_as_float32(self.extremes.astype(np.uint8))
        else:
            assert self.ranges is not None
            lows, highs = self.ranges[:, 0], self.ranges[:, 1]
            values = np.clip(
                ((self.extremes - lows[:, None]).astype(np.float32))
                / (highs - lows)[:, None].astype(np.float32),
                0.0,
                1.0,
            )
        return float(values.min()), float(values.max())


@dataclass(frozen=True)
class SlideItems:
    """A slide's superpixels: features and what downstream code needs of the map."""

    features: Float32Array  # (n_items, n_components)
    fitted: FittedReduction
    raw_feature_names: tuple[str, ...]
    sizes: Int64Array  # (n_items,) pixels of each
    boxes: Int32Array  # (n_items, 4): x0, y0, x1, y1, inclusive
    borders: Int64Array  # (m, 3): item a < item b, shared border in pixel edges

    @property
    def n_items(self) -> int:
        return int(self.features.shape[0])


class RawSpill:
    """Raw rows (float32) in a temporary file, appended block by block and read back in
    order: a slide's millions of superpixels times 160 raw maps do not stay in memory. A row
    already written may be replaced (an item a later block's piece joined): the few
    replacements stay in memory and are read back in their place."""

    def __init__(self, n_columns: int):
        self.n_columns = n_columns
        self.rows = 0
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - open until close()
        self._replaced: dict[int, Float32Array] = {}

    def append(self, rows: NDArray[np.floating]) -> None:
        self._file.write(np.ascontiguousarray(rows, dtype=np.float32).tobytes())
        self.rows += rows.shape[0]

    def replace(self, index: int, row: NDArray[np.floating]) -> None:
        if not 0 <= index < self.rows:
            raise IndexError(f"row {index} is not written yet ({self.rows} are)")
        self._replaced[index] = np.asarray(row, dtype=np.float32)

    def blocks(self) -> Iterator[Float32Array]:
        self._file.seek(0)
        replaced = np.array(sorted(self._replaced), dtype=np.int64)
        for start in range(0, self.rows, SPILL_ROWS):
            n = min(SPILL_ROWS, self.rows - start)
            rows = np.empty((n, self.n_columns), dtype=np.float32)
            self._file.readinto(rows.data)  # straight into the array: no second copy
            lo, hi = np.searchsorted(replaced, [start, start + n])
            for index in replaced[lo:hi].tolist():
                rows[index - start] = self._replaced[index]
            yield rows

    def close(self) -> None:
        self._file.close()


def featurize_slide(
    picture: StoredPicture,
    recipe: Recipe,
    write_items: Callable[[int, int, Int32Array], None],
    progress: ShareDone | None = None,
    block_size: int | None = None,
) -> SlideItems:
    """Superpixels of ``picture`` and their features; ``write_items(row, column, items)`` gets
    every block's item ids (global) at its place, in block order."""
    # A slide's items are superpixels whatever its size ("auto" included: an image read in
    # place is a slide however small it is).
    if recipe.superpixels == "never":
        raise ValueError(
            "a slide's items are superpixels: superpixels='never' would make one item per "
            "pixel; use 'auto' or 'always'"
        )
    picture = picture.chosen(
        chosen_channels(recipe, () if picture.photo else picture.channel_names)
    )
    names = _raw_names(picture, recipe)
    blocks = _slide_blocks(picture, recipe, block_size)
    slic_input = _slic_input(picture, recipe)
    advance = _block_counter(progress, len(blocks) + 1)
    spill = RawSpill(len(names))
    try:
        gathered = _superpixels(
            blocks, slic_input, recipe.superpixel_std, write_items, spill, advance
        )
        fitted = _fit(spill, names, recipe)
        features = np.concatenate([fitted.transform_rows(rows) for rows in spill.blocks()])
    finally:
        spill.close()
    if progress is not None:
        progress(1.0)
    return SlideItems(
        features=features,
        fitted=fitted,
        raw_feature_names=tuple(names),
        sizes=gathered.sizes(),
        boxes=gathered.boxes(),
        borders=gathered.borders(features.shape[0]),
    )


def _raw_names(picture: StoredPicture, recipe: Recipe) -> list[str]:
    """The names of the raw features the recipe gives for the slide's superpixels, checked
    to be at least as many as the components the reduction keeps."""
    n_channels = int(picture.extremes.shape[0])
    space_channels = 1 if picture.photo and recipe.colour == "grey" else n_channels
    names = raw_feature_names(
        space_channels,
        recipe.colour,
        recipe.filters,
        recipe.sigmas,
        recipe.energy_window,
        recipe.window,
        () if picture.photo else picture.channel_names,
    )
    if recipe.superpixel_std:
        names += [f"{name} std" for name in names]
    if recipe.n_components > len(names):
        raise ValueError(
            f"Recipe.n_components={recipe.n_components} is more than the {len(names)} raw "
            "features this recipe gives for this image; lower n_components or add filters"
        )
    return names


def _slide_blocks(picture: StoredPicture, recipe: Recipe, block_size: int | None) -> Blocks:
    """The slide's blocks (``SLIDE_BLOCK`` a side unless ``block_size`` says otherwise; 0:
    one block), each read by region in the recipe's colour space."""
    height, width = picture.shape

    def channels(rows: slice, cols: slice) -> Float32Array:
        colour = picture.colour(rows, cols)
        return in_colour_space(colour, recipe.colour) if picture.photo else colour

    maps = MapRecipe(recipe.filters, recipe.sigmas, recipe.energy_window, recipe.window)
    block = SLIDE_BLOCK if block_size is None else _block_side(block_size, height, width)
    block = block or max(height, width)
    return Blocks(channels, (height, width), maps, block)


def _block_counter(progress: ShareDone | None, total: int) -> Callable[[], None]:
    """``advance()``, called once a block is done, reports the share of ``total`` steps done;
    it stays below 1 until the features are projected (``progress(1.0)`` then)."""
    done = [0]

    def advance() -> None:
        done[0] += 1
        if progress is not None:
            progress(min(done[0] / total, 0.99))

    return advance


def _slic_input(picture: StoredPicture, recipe: Recipe) -> SlicInput:
    """As ``featurize._slic_input`` makes it of the whole picture, read by region."""
    low, high = picture.colour_range()
    spread = high - low if high > low else 1.0
    lab = picture.photo and picture.extremes.shape[0] == 3
    if lab:

        def values(rows: slice, cols: slice) -> Float32Array:
            return (picture.colour(rows, cols) - np.float32(low)) / np.float32(spread)

        return SlicInput(values, SlicScale(True, recipe.compactness, recipe.n_segments))

    def clipped(rows: slice, cols: slice) -> Float32Array:
        colour = picture.colour(rows, cols)
        return colour if picture.photo else np.clip(colour, 0.0, 1.0)

    compactness = recipe.compactness / 100.0 * spread
    return SlicInput(clipped, SlicScale(False, compactness, recipe.n_segments))


@dataclass
class _Gathered:
    """Each item's pixel count and box, block by block, grown where a later piece joined an
    item; the touching pairs (a, b, border), a pair found more than once summed up."""

    block_sizes: list[Int64Array] = field(default_factory=list)
    block_boxes: list[Int32Array] = field(default_factory=list)
    grown: dict[int, tuple[int, Int32Array]] = field(default_factory=dict)
    pairs: list[Int64Array] = field(default_factory=list)

    def grow(self, item: int, size: int, box: Int32Array) -> None:
        self.grown[item] = (size, box)

    def sizes(self) -> Int64Array:
        sizes = np.concatenate(self.block_sizes)
        for item, (size, _) in self.grown.items():
            sizes[item] += size
        return sizes

    def boxes(self) -> Int32Array:
        boxes = np.concatenate(self.block_boxes).astype(np.int32)
        for item, (_, box) in self.grown.items():
            boxes[item, :2] = np.minimum(boxes[item, :2], box[:2])
            boxes[item, 2:] = np.maximum(boxes[item, 2:], box[2:])
        return boxes

    def borders(self, n_items: int) -> Int64Array:
        """Each pair once. A pair is found twice only through a joined item (a piece of it
        touched the other item, and so did the item it joined, across a seam): only the few
        pairs with a joined end are summed, and the others copied block by block into the
        answer (a 20k slide has 4 million pairs: no sort of them all, no second copy)."""
        if not self.pairs:
            return np.empty((0, 3), dtype=np.int64)
        joined = np.zeros(n_items, dtype=bool)
        joined[list(self.grown)] = True
        twice = [joined[pairs[:, 0]] | joined[pairs[:, 1]] for pairs in self.pairs]
        maybe = np.concatenate([p[t] for p, t in zip(self.pairs, twice, strict=True)])
        keys, inverse = np.unique(maybe[:, 0] * n_items + maybe[:, 1], return_inverse=True)
        border = np.bincount(inverse.ravel(), weights=maybe[:, 2], minlength=keys.size)
        n_once = sum(int(t.size - t.sum()) for t in twice)
        out = np.empty((n_once + keys.size, 3), dtype=np.int64)
        at = 0
        for pairs, t in zip(self.pairs, twice, strict=True):
            once = pairs[~t]
            out[at : at + once.shape[0]] = once
            at += once.shape[0]
        out[at:, 0], out[at:, 1], out[at:, 2] = keys // n_items, keys % n_items, border
        return out


@dataclass(frozen=True)
class _Edges:
    """A block's items along its four sides (final ids)."""

    top: Int64Array
    bottom: Int64Array
    left: Int64Array
    right: Int64Array


def _slide_block(
    window: Float32Array,
    crop: _Crop,
    maps: MapRecipe,
    slic_values: NDArray[np.float32],
    scale: SlicScale,
    picture_pixels: int,
    with_std: bool,
) -> tuple[BlockPieces, Int32Array, Int64Array]:
    """``_block_superpixels`` and, of its pieces: boxes (in the block) and the pairs that
    touch inside it with their borders."""
    pieces = _block_superpixels(window, crop, maps, slic_values, scale, picture_pixels, with_std)
    items = pieces.items
    boxes = np.array(
        [
            (s[1].start, s[0].start, s[1].stop - 1, s[0].stop - 1)
            for s in ndi.find_objects(items + 1)
        ],
        dtype=np.int32,
    ).reshape(-1, 4)
    pairs = _touching(
        np.concatenate([items[:, :-1].ravel(), items[:-1, :].ravel()]),
        np.concatenate([items[:, 1:].ravel(), items[1:, :].ravel()]),
    )
    return pieces, boxes, pairs


def _touching(a: NDArray[np.integer], b: NDArray[np.integer]) -> Int64Array:
    """(k, 3): each pair of distinct neighbours (lower id first) and how many pixel edges they
    share, from the ids on either side of each edge."""
    cross = a != b
    lo = np.minimum(a[cross], b[cross]).astype(np.int64)
    hi = np.maximum(a[cross], b[cross]).astype(np.int64)
    if lo.size == 0:
        return np.empty((0, 3), dtype=np.int64)
    span = int(hi.max()) + 1
    keys, counts = np.unique(lo * span + hi, return_counts=True)
    return np.stack([keys // span, keys % span, counts], axis=1).astype(np.int64)


def _superpixels(
    blocks: Blocks,
    slic_input: SlicInput,
    with_std: bool,
    write_items: Callable[[int, int, Int32Array], None],
    spill: RawSpill,
    advance: Callable[[], None],
) -> _Gathered:
    height, width = blocks.shape

    def arguments(crop: _Crop) -> tuple[object, ...]:
        return blocks.maps, slic_input.of(crop), slic_input.scale, height * width, with_std

    stitcher = SeamStitcher(slic_input.scale.superpixel_pixels(height * width), with_std)
    gathered = _Gathered()
    # Blocks come in row order and every row of blocks is cut into the same columns: the
    # block above is the last one done in the same column, the one before is the last one
    # done if it is in the same row.
    above: dict[int, _Edges] = {}
    before: tuple[int, _Edges] | None = None
    for crop, (pieces, boxes, pairs) in zip(
        blocks.crops, blocks.map(_slide_block, arguments, advance), strict=True
    ):
        block = stitcher.add(crop.row, crop.col, pieces)
        write_items(crop.row, crop.col, block.ids)
        spill.append(block.new_rows)
        shift = np.array([crop.col, crop.row, crop.col, crop.row], dtype=np.int32)
        gathered.block_sizes.append(pieces.sizes[block.new_pieces])
        gathered.block_boxes.append(boxes[block.new_pieces] + shift)
        joins = block.joins
        for into, piece, row in zip(
            joins.into.tolist(), joins.pieces.tolist(), joins.rows, strict=True
        ):
            spill.replace(into, row)
            gathered.grow(into, int(pieces.sizes[piece]), boxes[piece] + shift)
        if pairs.size:
            ends = block.final[pairs[:, :2]]
            gathered.pairs.append(
                np.stack([ends.min(axis=1), ends.max(axis=1), pairs[:, 2]], axis=1)
            )
        wide = block.ids.astype(np.int64)
        edge = _Edges(wide[0], wide[-1], wide[:, 0], wide[:, -1])
        if crop.col in above:
            gathered.pairs.append(_touching(above[crop.col].bottom, edge.top))
        if before is not None and before[0] == crop.row:
            gathered.pairs.append(_touching(before[1].right, edge.left))
        above[crop.col] = edge
        before = (crop.row, edge)
    return gathered


def _fit(spill: RawSpill, names: list[str], recipe: Recipe) -> FittedReduction:
    """The reduction: exact means and scales over all items, the PCA on all of them up to
    ``PCA_SAMPLE``, on a fixed-seed sample above."""
    chosen = _pca_sample(spill.rows)
    rows = np.empty((chosen.size, spill.n_columns), dtype=np.float64)
    moments = Moments(0, np.zeros(spill.n_columns), np.zeros(spill.n_columns))
    start, taken = 0, 0
    for block in spill.blocks():
        stop = start + block.shape[0]
        lo, hi = np.searchsorted(chosen, [start, stop])
        rows[taken : taken + hi - lo] = block[chosen[lo:hi] - start]
        taken += hi - lo
        start = stop
        # In float64 a few thousand rows at a time: a whole block's three float64 temporaries
        # took 250 MB beside the PCA sample's 335 MB (2^18 rows x 160 raw maps).
        for first in range(0, block.shape[0], MOMENT_ROWS):
            wide = block[first : first + MOMENT_ROWS].astype(np.float64)
            mean = wide.mean(axis=0)
            wide -= mean
            moments = moments.merged(Moments(wide.shape[0], mean, np.square(wide).sum(axis=0)))
    mean, scale = standardiser(moments.mean, moments.std)
    scale = scale * family_divisors(names, recipe.family_balance)
    return fit_pca(rows, mean, scale, recipe.n_components)


__all__ = ["PCA_SAMPLE", "RawSpill", "SlideItems", "StoredPicture", "featurize_slide"]
