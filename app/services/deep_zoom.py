"""Deep Zoom for a tiled viewer: an image dataset's picture and a run's cluster mask as a `.dzi`
descriptor and PNG tiles, read from pyramids in the array store (`app/store/pyramids.py`).

A picture's pyramid is built at upload (`add_picture_pyramid`); an image uploaded before
pyramids existed, and every run's mask, get theirs on the first request that needs it, once
(`build_locks.py`: one lock per owner in this process; a second server building the same pyramid
at the same time only wastes the work: the later write replaces the earlier)."""

import io
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run, RunResult
from app.engine.image.deep_zoom import DeepZoom, coloured, levels
from app.engine.image.display import ChannelDisplay, default_display, render
from app.engine.image.masks import decode_index_png
from app.services import channel_tiles, picture_display, slide_masks
from app.services.build_locks import build_lock
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.image_rows import check_image_taken
from app.services.stored_image import decoded
from app.store import pyramids
from app.store.dataset_arrays import DISPLAY_IMAGE, IMAGE, is_slide
from app.store.sources.allowed import SourceRefused
from app.store.sources.images import SourceImage
from app.store.sources.referenced import referenced_image
from app.store.sources.tables import SourceError

# The workspace's cluster colours (app/static/js/workspace/palette.js), for a mask's tiles
# when the viewer names none.
PALETTE = (
    "4e79a7", "f28e2b", "59a14f", "e15759", "b07aa1", "76b7b2", "edc948", "ff9da7",
    "9c755f", "79706e", "1f77b4", "17becf", "bcbd22", "8c564b", "d62728", "2ca02c",
)  # fmt: skip
MAX_COLOURS = 1024
_HEX = re.compile(r"^[0-9a-fA-F]{6}$")
_TILE = re.compile(r"^(\d{1,6})_(\d{1,6})\.png$")


# -- the picture --------------------------------------------------------------------------


def picture_zoom(dataset: Dataset) -> DeepZoom:
    if dataset.kind != "image":
        raise InvalidInput(f"dataset {dataset.id} is a table, not an image")
    image = dataset.meta["image"]
    return DeepZoom(int(image["width"]), int(image["height"]))


def _shown_pixels(session: Session, dataset: Dataset) -> NDArray[np.uint8]:
    """What a browser shows of the image (`GET /datasets/{id}/image`), decoded."""
    pixels = decoded(session, dataset, DISPLAY_IMAGE, IMAGE)
    if not isinstance(pixels, np.ndarray):  # measured channels have a display PNG
        pixels = pixels.composite()
    return pixels


def preview_url(dataset: Dataset) -> str:
    """Where a page finds a small view of the image: the image itself, or for a slide (never
    one file for a browser) the one tile that shows it whole (the largest level that fits a
    tile)."""
    if not is_slide(dataset):
        return f"/api/v1/datasets/{dataset.id}/image"
    zoom = picture_zoom(dataset)
    level = zoom.max_level
    while level > 0 and max(zoom.level_size(level)) > zoom.tile_size:
        level -= 1
    return f"/api/v1/datasets/{dataset.id}/image_files/{level}/0_0.png"


def add_picture_pyramid(
    *, session: Session, dataset: Dataset, shown: NDArray[np.uint8] | None = None
) -> None:
    """Write the picture's pyramid in the caller's transaction (an upload's); ``shown``: the
    pixels a browser shows, when the caller has them decoded already."""
    pixels = shown if shown is not None else _shown_pixels(session, dataset)
    pyramids.write_levels(session=session, dataset_id=dataset.id, levels=levels(pixels))


def _ensure_picture_pyramid(session: Session, dataset: Dataset) -> None:
    if pyramids.has_levels(session=session, dataset_id=dataset.id):
        return
    with build_lock(("dataset", dataset.id)):
        session.commit()  # a fresh look: another request may have built it meanwhile
        if not pyramids.has_levels(session=session, dataset_id=dataset.id):
            add_picture_pyramid(session=session, dataset=dataset)
            session.commit()


def picture_descriptor(*, session: Session, dataset: Dataset) -> str:
    check_image_taken(dataset)
    zoom = picture_zoom(dataset)
    if _source_image(session, dataset) is not None:  # one read in place has its own levels
        return zoom.descriptor()
    if pyramids.has_levels(session=session, dataset_id=dataset.id):
        pass
    elif channel_tiles.shown_from_channels(dataset):
        channel_tiles.ensure_channel_pyramid(session, dataset)
    else:
        _ensure_picture_pyramid(session, dataset)
    return zoom.descriptor()


def picture_tile(
    *,
    session: Session,
    dataset: Dataset,
    level: int,
    tile: str,
    display: Sequence[ChannelDisplay] | None = None,
) -> bytes:
    """One tile of the picture as PNG, as shown by default or, for measured channels, with
    ``display``; 404 for a tile the pyramid does not have."""
    check_image_taken(dataset)
    zoom = picture_zoom(dataset)
    box = _tile_box(zoom, level, tile)
    source = _source_image(session, dataset)
    if source is not None:
        return _png(source_tile(source, dataset.meta["image"], zoom, level, box, display))
    if display is None:
        pixels = _read(session, level, box, dataset_id=dataset.id)
        if pixels is not None:  # read first, build on a miss: one query per tile once built
            return _png(pixels)
        if not channel_tiles.shown_from_channels(dataset):
            _ensure_picture_pyramid(session, dataset)
            return _png(_region(session, level, box, dataset_id=dataset.id))
        display = picture_display.defaults(session, dataset)
    return _png(channel_tiles.channel_tile(session, dataset, zoom, level, box, display))


def _source_image(session: Session, dataset: Dataset) -> SourceImage | None:
    try:
        return referenced_image(session, dataset)
    except SourceRefused as exc:
        raise Conflict(f"dataset {dataset.id}'s source can no longer be read: {exc}") from None


def source_tile(
    source: SourceImage,
    image: dict[str, Any],
    zoom: DeepZoom,
    level: int,
    box: tuple[int, int, int, int],
    display: Sequence[ChannelDisplay] | None = None,
) -> NDArray[np.uint8]:
    """A Deep Zoom tile made from the source's own resolution level nearest above it (the
    finest level no finer than the tile needs), read as a window and scaled down: a pyramidal
    source serves every tile from a window of about a tile's size. Measured channels are
    drawn with ``display`` (their default one when None)."""
    scale = 2 ** (zoom.max_level - level)  # full-resolution pixels per tile pixel
    x0, y0, x1, y1 = box
    chosen, factor = 0, 1.0
    for k, lv in enumerate(source.levels):
        down = source.width / lv.width
        if down <= scale * 1.01 and down > factor:
            chosen, factor = k, down
    lv = source.levels[chosen]
    ratio = scale / factor  # source pixels (of that level) per tile pixel
    # A source without a level near this scale (one level only, say) is sampled, not read
    # whole: a request never holds more than about a tile's pixels per step^2.
    step = max(1, int(ratio // 2))
    try:
        window = source.read(
            chosen,
            (int(y0 * ratio), min(lv.height, int(np.ceil(y1 * ratio)))),
            (int(x0 * ratio), min(lv.width, int(np.ceil(x1 * ratio)))),
            step,
        )
    except SourceError as exc:
        raise Conflict(f"the image's source cannot be read: {exc}") from None
    if image.get("photo"):
        shown = window[:, :, :3].astype(np.uint8)
    else:
        ranges = np.asarray(image["ranges"], dtype=np.float64)
        shown = render(np.moveaxis(window, 2, 0), display or default_display(ranges))
    size = (x1 - x0, y1 - y0)
    if (shown.shape[1], shown.shape[0]) != size:
        shown = np.asarray(Image.fromarray(shown).resize(size, Image.Resampling.BOX))
    return shown


# -- a run's mask ---------------------------------------------------------------------------


def _mask_zoom(session: Session, run: Run) -> DeepZoom:
    """The mask's levels and tiles (the image's), checking only that it has one: its PNG,
    megabytes for a large image, is read once, to build the pyramid, not on every tile."""
    has_mask = session.scalar(select(RunResult.mask.is_not(None)).where(RunResult.run_id == run.id))
    if has_mask is None:
        raise Conflict(f"run {run.id} is {run.status}; it has no result")
    dataset = session.get(Dataset, run.dataset_id)
    if dataset is None:
        raise NotFound(f"run {run.id}'s dataset is gone")
    if not has_mask and not is_slide(dataset):  # a slide's mask is made as it is read
        raise Conflict(f"run {run.id} is on a table; only runs on images have a mask")
    return picture_zoom(dataset)


def _ensure_mask_pyramid(session: Session, run: Run, zoom: DeepZoom) -> None:
    if pyramids.has_levels(session=session, run_id=run.id):
        return
    with build_lock(("run", run.id)):
        session.commit()
        if not pyramids.has_levels(session=session, run_id=run.id):
            mask_png = session.scalar(select(RunResult.mask).where(RunResult.run_id == run.id))
            assert mask_png is not None  # checked by _mask_zoom; results are never edited
            mask = decode_index_png(mask_png, (zoom.height, zoom.width))
            pyramids.write_levels(session=session, run_id=run.id, levels=levels(mask, mask=True))
            session.commit()


def mask_descriptor(*, session: Session, run: Run) -> str:
    zoom = _mask_zoom(session, run)
    if not _on_slide(session, run):
        _ensure_mask_pyramid(session, run, zoom)
    return zoom.descriptor()


def _on_slide(session: Session, run: Run) -> Dataset | None:
    dataset = session.get(Dataset, run.dataset_id)
    return dataset if dataset is not None and is_slide(dataset) else None


def mask_tile(
    *, session: Session, run: Run, level: int, tile: str, colours: Sequence[str] | None
) -> bytes:
    """One tile of the run's cluster mask, cluster c coloured ``colours[c]`` (hex RGB, cycled;
    the workspace's palette when None), as PNG."""
    palette = _palette(colours)
    zoom = _mask_zoom(session, run)
    box = _tile_box(zoom, level, tile)
    slide = _on_slide(session, run)
    if slide is not None:
        slide_masks.check_in_region(run, zoom, level, box)
        ids = slide_masks.mask_region(session, slide, run, level, zoom.max_level, box)
        if run.region is not None:  # the items outside the region have no label: clear
            rgba = np.empty((*ids.shape, 4), dtype=np.uint8)
            rgba[..., :3] = coloured(np.maximum(ids, 0), palette)
            rgba[..., 3] = np.where(ids >= 0, 255, 0)
            return _png(rgba)
        return _png(coloured(ids, palette))
    mask = _read(session, level, box, run_id=run.id)
    if mask is None:
        _ensure_mask_pyramid(session, run, zoom)
        mask = _region(session, level, box, run_id=run.id)
    return _png(coloured(mask, palette))


def _palette(colours: Sequence[str] | None) -> NDArray[np.uint8]:
    chosen = list(colours) if colours else list(PALETTE)
    if len(chosen) > MAX_COLOURS:
        raise InvalidInput(f"colours: at most {MAX_COLOURS} colours, got {len(chosen)}")
    wrong = [c for c in chosen if not _HEX.match(c)]
    if wrong:
        raise InvalidInput(
            f"colours: each colour is six hex digits (RRGGBB), not {', '.join(wrong[:3])}"
        )
    return np.array([[int(c[i : i + 2], 16) for i in (0, 2, 4)] for c in chosen], dtype=np.uint8)


# -- tiles --------------------------------------------------------------------------------


def _tile_box(zoom: DeepZoom, level: int, tile: str) -> tuple[int, int, int, int]:
    match = _TILE.match(tile)
    if match is None:
        raise NotFound(f"no tile {tile!r}: tiles are named <column>_<row>.png")
    try:
        return zoom.tile_box(level, int(match.group(1)), int(match.group(2)))
    except ValueError as exc:
        raise NotFound(f"no tile {level}/{tile}: {exc}") from None


def _read(
    session: Session,
    level: int,
    box: tuple[int, int, int, int],
    *,
    dataset_id: int | None = None,
    run_id: int | None = None,
) -> NDArray[np.integer] | None:
    """The box of a pyramid level; None when the level is not stored (yet)."""
    x0, y0, x1, y1 = box
    return pyramids.read_level_region(
        session=session,
        level=level,
        rows=(y0, y1),
        columns=(x0, x1),
        dataset_id=dataset_id,
        run_id=run_id,
    )


def _region(
    session: Session,
    level: int,
    box: tuple[int, int, int, int],
    *,
    dataset_id: int | None = None,
    run_id: int | None = None,
) -> NDArray[np.integer]:
    pixels = _read(session, level, box, dataset_id=dataset_id, run_id=run_id)
    if pixels is None:
        raise NotFound(f"level {level} of the pyramid is missing from the array store")
    return pixels


def _png(pixels: NDArray[np.integer]) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8)).save(
        buffer,
        format="PNG",
        compress_level=1,  # tiles are many and small: speed over size
    )
    return buffer.getvalue()
