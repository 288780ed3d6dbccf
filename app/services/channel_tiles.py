"""Deep Zoom tiles of an image's measured channels, drawn with a display (each channel's
visibility, colour and range: ``picture_display.py``) as they are asked for.

The tiles read the image's channel pyramid (``pyramids.CHANNELS``: every level as measured,
halved by averaging), so a tile is a few chunks whatever the display. A slide's full level is
its stored pixels; its pyramid below is written at upload (``slides.py``), and a slide's
default picture is drawn from it too. A picture small enough to decode gets its pyramid on the
first tile that needs it, as its picture pyramid would (``deep_zoom.py``)."""

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.engine.image.deep_zoom import DeepZoom, levels
from app.engine.image.display import ChannelDisplay, halve_channels, render
from app.services.build_locks import build_lock
from app.services.errors import NotFound
from app.services.picture_display import is_measured, picture_planes
from app.store import chunks, pyramids
from app.store.dataset_arrays import SLIDE_PIXELS, is_slide


def shown_from_channels(dataset: Dataset) -> bool:
    """A slide of measured channels: its default picture is drawn from its channels too (a
    slide stored before this has a picture pyramid, and is drawn from that by default)."""
    return is_slide(dataset) and is_measured(dataset)


def channel_tile(
    session: Session,
    dataset: Dataset,
    zoom: DeepZoom,
    level: int,
    box: tuple[int, int, int, int],
    display: Sequence[ChannelDisplay],
) -> NDArray[np.uint8]:
    """The tile ``box`` of ``level`` as ``display`` shows it, (h, w, 3) uint8."""
    pixels = _region(session, dataset, zoom, level, box)
    if pixels is None:
        ensure_channel_pyramid(session, dataset)
        pixels = _region(session, dataset, zoom, level, box)
        if pixels is None:
            raise NotFound(f"level {level} of the channels' pyramid is missing from the store")
    return render(np.moveaxis(pixels, 2, 0), display)


def _region(
    session: Session,
    dataset: Dataset,
    zoom: DeepZoom,
    level: int,
    box: tuple[int, int, int, int],
) -> NDArray[np.generic] | None:
    x0, y0, x1, y1 = box
    if is_slide(dataset) and level == zoom.max_level:  # the stored pixels themselves
        return chunks.read_region(
            session=session,
            dataset_id=dataset.id,
            kind=SLIDE_PIXELS,
            rows=(y0, y1),
            columns=(x0, x1),
        )
    return pyramids.read_level_region(
        session=session,
        level=level,
        rows=(y0, y1),
        columns=(x0, x1),
        dataset_id=dataset.id,
        layer=pyramids.CHANNELS,
    )


def ensure_channel_pyramid(session: Session, dataset: Dataset) -> None:
    """Build the channels' pyramid if it is not stored (once: a lock per dataset here)."""
    if pyramids.has_levels(session=session, dataset_id=dataset.id, layer=pyramids.CHANNELS):
        return
    with build_lock(("channels", dataset.id)):
        session.commit()  # a fresh look: another request may have built it meanwhile
        if pyramids.has_levels(session=session, dataset_id=dataset.id, layer=pyramids.CHANNELS):
            return
        if is_slide(dataset):
            write_slide_channel_pyramid(session, dataset)
        else:
            pyramids.write_levels(
                session=session,
                dataset_id=dataset.id,
                levels=levels(_picture_channels(session, dataset), halve=halve_channels),
                layer=pyramids.CHANNELS,
            )
        session.commit()


def write_slide_channel_pyramid(session: Session, dataset: Dataset) -> None:
    """A stored slide's levels below the full one, band by band from its stored pixels."""
    image = dataset.meta["image"]
    width, height = int(image["width"]), int(image["height"])
    read = chunks.region_reader(session=session, dataset_id=dataset.id, kind=SLIDE_PIXELS)
    pyramids.write_levels_in_bands(
        session=session,
        width=width,
        height=height,
        full=lambda start, stop: read((start, stop), (0, width)),
        halve=halve_channels,
        dataset_id=dataset.id,
        layer=pyramids.CHANNELS,
        full_stored=True,
    )


def _picture_channels(session: Session, dataset: Dataset) -> NDArray[np.generic]:
    return np.moveaxis(picture_planes(session, dataset).planes, 0, 2)
