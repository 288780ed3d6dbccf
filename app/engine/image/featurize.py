"""Image featurization: a stored recipe turns an image into items (pixels or superpixels) with
a few features each, and its fitted reduction featurizes other images the same way.

Pipeline (DESIGN.md Sec. 9):

1. Channels: CIE Lab for colour images by default (``colour="rgb"`` keeps RGB, ``"grey"`` takes
   the luminance); grey images stay grey; alpha is dropped; values scaled as
   ``skimage.util.img_as_float32`` does.
2. Raw maps per channel: the multiscale filters of ``skimage.feature.multiscale_basic_features``
   (intensity, edges, texture at each sigma) and/or the papers' w x w window of pixel values
   (reflect-padded; specs/cec-ib.md Sec. 5.7 uses 7 x 7 reduced to 5 components). With
   ``energy_window`` > 0 (the default, 3) the edge and texture responses at scale sigma are
   replaced by their local mean magnitude over about ``energy_window`` * sigma pixels: a single
   pixel's response inside a texture is noise, its neighbourhood's energy describes the texture
   (Laws; Jain & Farrokhnia 1991), and Gaussian clusters need that.
3. Items: every pixel, or SLIC superpixels (``superpixels="auto"`` uses them above 512 x 512
   pixels), each with the mean (and, by default, the standard deviation) of every raw map over
   its pixels.
4. Reduction: each raw feature standardised and weighted by its family (``family_balance``;
   families: intensity, edges and texture, window, and the superpixels' standard deviations of
   each), then PCA to ``n_components``. The default 1 gives every family the same total
   variance: with plain standardisation (0) the edge and texture maps (3 per intensity) outvote
   the smoothed colours (bench_image, scribbled PPC on noisy shapes: 0.57 mIoU against 0.95).
   2 (a third of their spread; the default until PPC weighted its scribbles up) starves the
   texture directions instead: with 1, PPC on bench_image's 5 tasks x 3 draws went from 0.759
   to 0.778 mIoU (applied to a second image 0.696 -> 0.715; brick against grass 0.670 ->
   0.696) and CEC-IB from 0.714 to 0.737 (applied 0.625 -> 0.624). For pixel items the means
   and scales come from every pixel and the PCA from up to 2**18 pixels (all of them for
   images that ``"auto"`` keeps as pixels, a fixed-seed sample above that); for superpixels
   both come from the superpixels.

Maps are computed a group at a time (one channel and sigma) and reduced at once, in two passes
for pixels (statistics and sample, then projection), so memory grows with H * W * n_components,
not with the number of raw maps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from skimage.segmentation import slic

from app.engine.core.validation import check_choice, check_int, check_real
from app.engine.image._filter_bank import (
    COLOUR_SPACES,
    FILTERS,
    Float32Array,
    family_divisors,
    image_channels,
    in_colour_space,
    map_groups,
    maps_per_channel,
    n_groups,
    raw_feature_names,
)
from app.engine.image._reduction import FittedReduction, fit_pca, standardiser
from app.engine.image.blockwise import (
    BLOCK,
    SLIC_SMOOTHING,
    Blocks,
    MapRecipe,
    SlicInput,
    SlicScale,
    pixel_features,
    pixel_statistics,
    superpixel_items,
)
from app.engine.image.channels import Multichannel
from app.engine.image.superpixel_count import default_superpixels
from app.engine.progress import ShareDone

__all__ = [
    "AUTO_SUPERPIXEL_PIXELS",
    "Featurization",
    "FittedReduction",
    "Recipe",
    "apply_featurization",
    "featurize",
]

Int32Array = NDArray[np.int32]

AUTO_SUPERPIXEL_PIXELS = 512 * 512
# Above this many pixels the maps are computed in blocks of BLOCK pixels a side: memory per
# block, not per picture (a 3,000 x 3,000 photo peaks at 1.2 GB whole; the whole-picture path
# grows by about 140 MB per megapixel). Below it the whole picture at once, which is about 15%
# faster (no halos computed twice).
BLOCKWISE_PIXELS = 4 * BLOCK * BLOCK
MIN_BLOCK = 16
PCA_SAMPLE = 2**18
MAX_WINDOW = 31
MAX_ENERGY_WINDOW = 16.0
MAX_BALANCE = 4.0


@dataclass(frozen=True)
class Recipe:
    """How to featurize an image; immutable, validated on construction, JSON-ready.

    * ``colour``: ``"lab"``, ``"rgb"`` or ``"grey"``: the channels of a colour photo (a grey
      image always has one; a ``Multichannel`` image keeps its measured channels).
    * ``filters``: any of ``"intensity"``, ``"edges"``, ``"texture"`` (empty: window only).
    * ``sigmas``: Gaussian scales of the filters, in pixels.
    * ``energy_window``: 0 keeps the raw edge and texture responses; w > 0 replaces them by
      their local mean magnitude over about w * sigma pixels.
    * ``window``: 0 (off) or an odd w for the w x w window of pixel values.
    * ``n_components``: PCA components kept.
    * ``superpixels``: ``"auto"`` (SLIC when the image has more than 512 * 512 pixels),
      ``"never"`` or ``"always"``; ``n_segments`` (``None``: ``default_superpixels``, one per
      64 pixels up to 65,536, and never fewer than one per 256 pixels) and
      ``compactness`` go to ``skimage.segmentation.slic`` (which compares colours in Lab, 0..100;
      for grey images and measured channels compactness is scaled to mean the same).
    * ``superpixel_std``: superpixels get each raw map's standard deviation besides its mean.
    * ``family_balance``: p in [0, 2]; before the PCA every standardised map of a family with
      n maps is divided by (n / n_smallest) ** (p / 2). 0: plain standardisation, where the 45
      edge and texture maps of a colour image outvote its 15 intensities; 1: every family
      carries the same total variance.
    * ``channels``: the measured channels featurized, by name and in the image's order (empty:
      every channel). A channel that only adds noise (autofluorescence, an unused stain) can
      be left out; a photo's channels are chosen by ``colour``.
    """

    colour: str = "lab"
    filters: tuple[str, ...] = FILTERS
    sigmas: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
    energy_window: float = 3.0
    window: int = 0
    n_components: int = 8
    superpixels: str = "auto"
    n_segments: int | None = None
    compactness: float = 10.0
    superpixel_std: bool = True
    family_balance: float = 1.0
    channels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice("Recipe.colour", self.colour, list(COLOUR_SPACES))
        check_choice("Recipe.superpixels", self.superpixels, ["auto", "never", "always"])
        object.__setattr__(self, "filters", _check_filters(self.filters))
        object.__setattr__(self, "sigmas", _check_sigmas(self.sigmas, bool(self.filters)))
        energy = check_real("Recipe.energy_window", self.energy_window, 0.0, MAX_ENERGY_WINDOW)
        object.__setattr__(self, "energy_window", energy)
        window = check_int("Recipe.window", self.window, 0, MAX_WINDOW)
        if window % 2 == 0 and window:
            raise ValueError(f"Recipe.window must be 0 (off) or odd, got {window}")
        if not self.filters and not window:
            raise ValueError("Recipe needs at least one filter or a window (window > 0)")
        most = 3 * maps_per_channel(self.filters, len(self.sigmas), window)
        most *= 2 if self.superpixel_std and self.superpixels != "never" else 1
        check_int("Recipe.n_components", self.n_components, 1, most)
        if self.n_segments is not None:
            check_int("Recipe.n_segments", self.n_segments, 1)
        compactness = check_real("Recipe.compactness", self.compactness, 0.0)
        if compactness <= 0:
            raise ValueError(f"Recipe.compactness must be positive, got {self.compactness!r}")
        object.__setattr__(self, "compactness", compactness)
        balance = check_real("Recipe.family_balance", self.family_balance, 0.0, MAX_BALANCE)
        object.__setattr__(self, "family_balance", balance)
        if not isinstance(self.superpixel_std, bool):
            raise ValueError(
                f"Recipe.superpixel_std must be true or false, got {self.superpixel_std!r}"
            )
        object.__setattr__(self, "channels", _check_channels(self.channels))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: tuples become lists."""
        out = asdict(self)
        out["filters"] = list(self.filters)
        out["sigmas"] = list(self.sigmas)
        out["channels"] = list(self.channels)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recipe:
        """The inverse of ``to_dict``; missing fields take their defaults, unknown ones fail."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a recipe must be a mapping of fields, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown recipe fields {unknown}; known fields: {sorted(known)}")
        values = dict(data)
        for name in ("filters", "sigmas", "channels"):
            if name in values and isinstance(values[name], list):
                values[name] = tuple(values[name])
        return cls(**values)

    def uses_superpixels(self, height: int, width: int) -> bool:
        if self.superpixels == "auto":
            return height * width > AUTO_SUPERPIXEL_PIXELS
        return self.superpixels == "always"


def _check_filters(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise ValueError(f"Recipe.filters must be a list of filter names, got {value!r}")
    for name in value:
        check_choice("each of Recipe.filters", name, list(FILTERS))
    if len(set(value)) != len(value):
        raise ValueError(f"Recipe.filters repeats a filter: {list(value)}")
    return tuple(f for f in FILTERS if f in value)


def _check_channels(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise ValueError(f"Recipe.channels must be a list of channel names, got {value!r}")
    if not all(isinstance(name, str) and name.strip() for name in value):
        raise ValueError(f"Recipe.channels must name channels, got {list(value)!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"Recipe.channels repeats a channel: {list(value)}")
    return tuple(value)


def chosen_channels(recipe: Recipe, names: Sequence[str]) -> list[int]:
    """Where the recipe's channels are among an image's ``names`` (every one when it names
    none); ValueError naming what the image lacks, or a choice made for a photo."""
    if not recipe.channels:
        return list(range(len(names)))
    if not names:
        raise ValueError(
            "Recipe.channels names measured channels; a photo's channels are chosen by colour"
        )
    missing = [name for name in recipe.channels if name not in names]
    if missing:
        raise ValueError(
            f"Recipe.channels: the image has no channel {', '.join(map(repr, missing))}; its "
            f"channels are {', '.join(map(repr, names))}"
        )
    order = [k for k, name in enumerate(names) if name in recipe.channels]
    if [names[k] for k in order] != list(recipe.channels):
        raise ValueError(
            f"Recipe.channels must keep the image's order: {[names[k] for k in order]}"
        )
    return order


def _check_sigmas(value: object, needed: bool) -> tuple[float, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise ValueError(f"Recipe.sigmas must be a list of positive numbers, got {value!r}")
    sigmas = tuple(check_real("each of Recipe.sigmas", s, 0.0, 256.0) for s in value)
    if any(s <= 0 for s in sigmas):
        raise ValueError(f"Recipe.sigmas must be positive, got {list(value)}")
    if needed and not sigmas:
        raise ValueError("Recipe.sigmas must not be empty when filters are used")
    if len(set(sigmas)) != len(sigmas):
        raise ValueError(f"Recipe.sigmas repeats a value: {list(value)}")
    return sigmas


@dataclass(frozen=True, eq=False)
class Featurization:
    """Items and their features for one image.

    * ``features``: (n_items, n_components) float32.
    * ``item_of_pixel``: (H, W) int32, the item of every pixel; for pixel items the identity in
      raster order (item ``r * W + c``), for superpixels ids 0..n_items-1.
    * ``shape``: (H, W); ``superpixels``: whether items are superpixels.
    * ``fitted``: the reduction, to featurize other images with ``apply_featurization``.
    * ``raw_feature_names``: what the reduction's inputs are, in order.
    """

    features: Float32Array
    item_of_pixel: Int32Array
    shape: tuple[int, int]
    superpixels: bool
    fitted: FittedReduction
    raw_feature_names: tuple[str, ...]

    @property
    def n_items(self) -> int:
        return int(self.features.shape[0])


def featurize(
    image: ArrayLike | Multichannel,
    recipe: Recipe | None = None,
    progress: ShareDone | None = None,
    block_size: int | None = None,
) -> Featurization:
    """Featurize ``image`` (a photo: H x W grey or H x W x 3/4 colour; or a ``Multichannel``
    image of measured channels) and fit the reduction on it.

    ``progress(fraction)`` is called with non-decreasing fractions ending at 1.0; an exception it
    raises aborts the work. ``block_size``: the maps are computed in blocks of about this many
    pixels a side (``blockwise.py``); None: in blocks of ``BLOCK`` above ``BLOCKWISE_PIXELS``
    pixels, whole below; 0: whole.
    """
    return _run(image, Recipe() if recipe is None else recipe, None, progress, block_size)


def apply_featurization(
    image: ArrayLike | Multichannel,
    recipe: Recipe,
    fitted: FittedReduction,
    progress: ShareDone | None = None,
    block_size: int | None = None,
) -> Featurization:
    """Featurize another image with ``recipe`` and an already fitted reduction (not refitted).

    Superpixels, if the recipe uses them for this image's size, are computed on this image. The
    image must give the same raw features as the one the reduction was fitted on (same recipe,
    colour against colour).
    """
    if not isinstance(fitted, FittedReduction):
        raise ValueError(f"fitted must be a FittedReduction, got {type(fitted).__name__}")
    return _run(image, recipe, fitted, progress, block_size)


class _Meter:
    def __init__(self, progress: ShareDone | None, total: float) -> None:
        self.progress, self.total, self.done = progress, max(total, 1.0), 0.0

    def advance(self, units: float = 1.0) -> None:
        self.done += units
        if self.progress is not None:
            self.progress(min(self.done / self.total, 1.0))

    def counted(self, groups: Iterator[Float32Array]) -> Iterator[Float32Array]:
        for group in groups:
            yield group
            self.advance()


def _run(
    image: ArrayLike | Multichannel,
    recipe: Recipe,
    fitted: FittedReduction | None,
    progress: ShareDone | None,
    block_size: int | None,
) -> Featurization:
    if not isinstance(recipe, Recipe):
        raise ValueError(f"recipe must be a Recipe, got {type(recipe).__name__}")
    picture = _picture(image, recipe)
    _, height, width = picture.channels.shape
    _check_raw_features(picture, recipe, fitted)
    block = _block_side(block_size, height, width)
    if block:
        return _run_in_blocks(picture, recipe, fitted, progress, block)
    groups = n_groups(picture.channels.shape[0], recipe.filters, len(recipe.sigmas), recipe.window)
    if recipe.uses_superpixels(height, width):
        meter = _Meter(progress, 1.25 * groups)  # SLIC: a quarter of the maps' work
        item_of_pixel, fitted, features = _whole_superpixels(picture, recipe, fitted, meter, groups)
    else:
        meter = _Meter(progress, groups if fitted is not None else 2 * groups)
        item_of_pixel, fitted, features = _whole_pixels(picture, recipe, fitted, meter)
    return _finished(progress, picture, recipe, features, item_of_pixel, fitted)


def _picture(image: ArrayLike | Multichannel, recipe: Recipe) -> _Picture:
    """The image's channels (a photo's in the recipe's colour space, a ``Multichannel`` image's
    as measured) and the names of the raw features the recipe gives for them."""
    if isinstance(image, Multichannel):
        kept = chosen_channels(recipe, image.names)
        if len(kept) < len(image.names):
            image = Multichannel(image.planes[kept], tuple(image.names[k] for k in kept))
        colour = channels = image.scaled()
        channel_names = image.names
    else:
        chosen_channels(recipe, ())
        colour = image_channels(image)
        channels = in_colour_space(colour, recipe.colour)
        channel_names = ()
    n_channels, height, width = channels.shape
    names = raw_feature_names(
        n_channels,
        recipe.colour,
        recipe.filters,
        recipe.sigmas,
        recipe.energy_window,
        recipe.window,
        channel_names,
    )
    if recipe.uses_superpixels(height, width) and recipe.superpixel_std:
        names += [f"{name} std" for name in names]
    return _Picture(colour, channels, names, photo=not channel_names)


def _check_raw_features(picture: _Picture, recipe: Recipe, fitted: FittedReduction | None) -> None:
    """The raw features must be as many as a fitted reduction takes, and at least as many as
    the components a new one keeps."""
    names = picture.names
    n_channels, height, width = picture.channels.shape
    superpixels = recipe.uses_superpixels(height, width)
    if fitted is not None and fitted.n_raw != len(names):
        raise ValueError(
            f"the fitted reduction expects {fitted.n_raw} raw features but this recipe gives "
            f"{len(names)} for this image ({n_channels} channel(s), "
            f"{'superpixels' if superpixels else 'pixels'}): use the recipe it was fitted with, "
            "on an image with as many colour channels"
        )
    if fitted is None and recipe.n_components > len(names):
        raise ValueError(
            f"Recipe.n_components={recipe.n_components} is more than the {len(names)} raw "
            "features this recipe gives for this image; lower n_components or add filters"
        )


def _maps(picture: _Picture, recipe: Recipe) -> Iterator[Float32Array]:
    """The raw maps of the whole picture, a group at a time (computed afresh on each call)."""
    return map_groups(
        picture.channels, recipe.filters, recipe.sigmas, recipe.energy_window, recipe.window
    )


def _whole_superpixels(
    picture: _Picture,
    recipe: Recipe,
    fitted: FittedReduction | None,
    meter: _Meter,
    groups: int,
) -> tuple[Int32Array, FittedReduction, Float32Array]:
    """SLIC superpixels of the whole picture, the reduction (fitted on them unless given), and
    their features. SLIC counts on ``meter`` as a quarter of the ``groups`` of maps."""
    item_of_pixel, n_items = _slic(picture.colour, recipe, photo=picture.photo)
    meter.advance(0.25 * groups)
    raw = _aggregate(meter.counted(_maps(picture, recipe)), item_of_pixel.ravel(), n_items, recipe)
    if fitted is None:
        fitted = _reduction(raw, raw.mean(axis=0), raw.std(axis=0), picture.names, recipe)
    return item_of_pixel, fitted, fitted.transform_rows(raw)


def _whole_pixels(
    picture: _Picture, recipe: Recipe, fitted: FittedReduction | None, meter: _Meter
) -> tuple[Int32Array, FittedReduction, Float32Array]:
    """Every pixel of the whole picture an item, the reduction (fitted on them unless given:
    one more pass over the maps), and their features."""
    _, height, width = picture.channels.shape
    n_pixels = height * width
    item_of_pixel = np.arange(n_pixels, dtype=np.int32).reshape(height, width)
    if fitted is None:
        fitted = _fit_on_pixels(
            meter.counted(_maps(picture, recipe)), picture.names, n_pixels, recipe
        )
    return (
        item_of_pixel,
        fitted,
        fitted.project_groups(meter.counted(_maps(picture, recipe)), n_pixels),
    )


def _slic(colour: Float32Array, recipe: Recipe, photo: bool) -> tuple[Int32Array, int]:
    """SLIC rescales the whole image (all channels together) to 0..1, then compares a colour
    photo's pixels in Lab (0..100) and anything else as it is (0..1). So that ``compactness``
    weighs space against values alike for every image, it is divided by 100 for the latter;
    measured channels, scaled one by one, are clipped to their percentile range first so a few
    saturated pixels do not squash the rest."""
    height, width = colour.shape[1:]
    n_segments = recipe.n_segments or default_superpixels(height * width)
    lab = photo and colour.shape[0] == 3
    segments = slic(
        np.moveaxis(colour if photo else np.clip(colour, 0.0, 1.0), 0, 2),
        n_segments=n_segments,
        compactness=recipe.compactness if lab else recipe.compactness / 100.0,
        start_label=0,
        sigma=SLIC_SMOOTHING,
        channel_axis=-1,
        convert2lab=lab,
    )
    ids, inverse = np.unique(segments, return_inverse=True)
    return inverse.reshape(height, width).astype(np.int32), int(ids.size)


def _aggregate(
    groups: Iterator[Float32Array], items: Int32Array, n_items: int, recipe: Recipe
) -> NDArray[np.float64]:
    """Per-item mean (then standard deviation) of every raw map: (n_items, n_raw)."""
    counts = np.bincount(items, minlength=n_items).astype(np.float64)
    means, stds = [], []
    for group in groups:
        for values in group:
            mean = np.bincount(items, weights=values, minlength=n_items) / counts
            means.append(mean)
            if recipe.superpixel_std:
                spread = np.bincount(items, weights=(values - mean[items]) ** 2, minlength=n_items)
                stds.append(np.sqrt(spread / counts))
    return np.stack(means + stds, axis=1)


def _pca_sample(n_pixels: int) -> NDArray[np.int64]:
    """The pixels (raster indices, sorted) the PCA is fitted on: all, or a fixed-seed sample."""
    if n_pixels <= PCA_SAMPLE:
        return np.arange(n_pixels, dtype=np.int64)
    return np.sort(np.random.default_rng(0).choice(n_pixels, PCA_SAMPLE, replace=False))


def _fit_on_pixels(
    groups: Iterator[Float32Array], names: list[str], n_pixels: int, recipe: Recipe
) -> FittedReduction:
    """Exact per-map means and scales over all pixels; PCA on a fixed sample of pixels."""
    sample = _pca_sample(n_pixels)
    n_raw = len(names)
    rows = np.empty((sample.size, n_raw), dtype=np.float32)
    mean = np.empty(n_raw)
    std = np.empty(n_raw)
    start = 0
    for group in groups:
        stop = start + group.shape[0]
        group_mean = group.mean(axis=1, dtype=np.float64)
        mean[start:stop] = group_mean
        std[start:stop] = [
            math.sqrt(np.mean(np.square(values - m, dtype=np.float64)))
            for values, m in zip(group, group_mean, strict=True)
        ]
        rows[:, start:stop] = group[:, sample].T
        start = stop
    return _reduction(rows, mean, std, names, recipe)


def _reduction(
    rows: NDArray[np.floating],
    mean: NDArray[np.float64],
    std: NDArray[np.float64],
    names: list[str],
    recipe: Recipe,
) -> FittedReduction:
    """Standardise every raw map by its ``mean`` and ``std``, weigh families by the recipe's
    balance, and fit the PCA on ``rows`` (all items, or the pixels' sample)."""
    mean, scale = standardiser(mean, std)
    scale = scale * family_divisors(names, recipe.family_balance)
    return fit_pca(rows, mean, scale, recipe.n_components)


# --- In blocks (blockwise.py) ----------------------------------------------------------------


def _block_side(block_size: int | None, height: int, width: int) -> int:
    """0 for the whole picture at once, else the blocks' side."""
    if block_size is None:
        return BLOCK if height * width > BLOCKWISE_PIXELS else 0
    block = check_int("block_size", block_size, 0)
    if 0 < block < MIN_BLOCK:
        raise ValueError(f"block_size must be 0 (whole) or at least {MIN_BLOCK}, got {block}")
    return block


@dataclass(frozen=True, eq=False)
class _Picture:
    colour: Float32Array  # (C, H, W) as scaled for SLIC (a photo's RGB or grey; or channels)
    channels: Float32Array  # (C, H, W) in the recipe's colour space: what the maps are of
    names: list[str]  # of the raw maps
    photo: bool


def _run_in_blocks(
    picture: _Picture,
    recipe: Recipe,
    fitted: FittedReduction | None,
    progress: ShareDone | None,
    block: int,
) -> Featurization:
    maps = MapRecipe(recipe.filters, recipe.sigmas, recipe.energy_window, recipe.window)
    blocks = Blocks.of_array(picture.channels, maps, block)
    _, height, width = picture.channels.shape
    if recipe.uses_superpixels(height, width):
        meter = _Meter(progress, len(blocks))
        slic_input = _slic_input(picture, recipe)
        item_of_pixel, raw = superpixel_items(
            blocks, slic_input, recipe.superpixel_std, meter.advance
        )
        if fitted is None:
            fitted = _reduction(raw, raw.mean(axis=0), raw.std(axis=0), picture.names, recipe)
        features = fitted.transform_rows(raw)
    else:
        n_pixels = height * width
        meter = _Meter(progress, len(blocks) * (1 if fitted is not None else 2))
        if fitted is None:
            sample = _pca_sample(n_pixels)
            moments, rows = pixel_statistics(blocks, len(picture.names), sample, meter.advance)
            fitted = _reduction(rows, moments.mean, moments.std, picture.names, recipe)
        features = pixel_features(blocks, fitted, meter.advance)
        item_of_pixel = np.arange(n_pixels, dtype=np.int32).reshape(height, width)
    return _finished(progress, picture, recipe, features, item_of_pixel, fitted)


def _slic_input(picture: _Picture, recipe: Recipe) -> SlicInput:
    """What ``_slic`` gives SLIC for the whole picture, so each block can be scaled alike: a
    colour photo rescaled to 0..1 as SLIC would (then Lab), else the values and SLIC's
    whole-picture range folded into the compactness (see ``SlicInput.segments``)."""
    colour = picture.colour if picture.photo else np.clip(picture.colour, 0.0, 1.0)
    low, high = float(colour.min()), float(colour.max())
    spread = high - low if high > low else 1.0
    lab = picture.photo and colour.shape[0] == 3
    if lab:
        values, compactness = (colour - np.float32(low)) / np.float32(spread), recipe.compactness
    else:
        values, compactness = colour, recipe.compactness / 100.0 * spread
    return SlicInput.of_array(values, SlicScale(lab, compactness, recipe.n_segments))


def _finished(
    progress: ShareDone | None,
    picture: _Picture,
    recipe: Recipe,
    features: Float32Array,
    item_of_pixel: Int32Array,
    fitted: FittedReduction,
) -> Featurization:
    """The featurization, once every map is pooled (its progress at 100%)."""
    if progress is not None:
        progress(1.0)
    height, width = item_of_pixel.shape
    return Featurization(
        features=features,
        item_of_pixel=item_of_pixel,
        shape=(height, width),
        superpixels=recipe.uses_superpixels(height, width),
        fitted=fitted,
        raw_feature_names=tuple(picture.names),
    )
