"""Featurize a slide (`app/services/slides.py`) block by block from the array store.

Everything goes to the store while the job runs, in one session that only reads until the end
(`chunks.deferred_records`), so no database lock is held for the minutes a slide takes: the
map of pixels to items (tiled, (H, W) int32; it is also the full level of the items' Deep Zoom
pyramid, whose lower levels follow), the items' pixel counts, boxes and shared borders, and
the features. Then, in that session's one write, the dataset's arrays are replaced as for any
image (`featurizer._store`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.engine.image.deep_zoom import halve_mask
from app.engine.image.featurize import Recipe
from app.engine.image.slide_featurize import SlideItems, StoredPicture, featurize_slide
from app.jobs.featurize.free_memory import release_free_memory
from app.store import chunks, pyramids
from app.store.dataset_arrays import (
    ITEM_BORDERS,
    ITEM_BOXES,
    ITEM_OF_PIXEL,
    ITEM_SIZES,
    SLIDE_PIXELS,
)
from app.store.sources.referenced import referenced_image
from app.store.sources.tables import SourceError

SLIDE_ARRAYS = [ITEM_SIZES, ITEM_BOXES, ITEM_BORDERS]


def stored_picture(session: Session, dataset: Dataset) -> StoredPicture:
    """A slide as featurization reads it: regions of its stored pixels, or of the full level
    of its source (imported by reference; refused if the source changed since)."""
    image = dataset.meta["image"]
    source = referenced_image(session, dataset)
    if source is not None:
        if source.current_version() != source.version:
            raise SourceError(
                f"{source.url} changed since it was imported; import it again to read it as "
                "it is now"
            )

        def region(rows: slice, cols: slice) -> NDArray[np.generic]:
            return source.read(0, (rows.start, rows.stop), (cols.start, cols.stop))

    else:
        read = chunks.region_reader(session=session, dataset_id=dataset.id, kind=SLIDE_PIXELS)

        def region(rows: slice, cols: slice) -> NDArray[np.generic]:
            return read((rows.start, rows.stop), (cols.start, cols.stop))

    return StoredPicture(
        shape=(int(image["height"]), int(image["width"])),
        read=region,
        photo=bool(image["photo"]),
        channel_names=tuple(image["channels"]),
        extremes=np.asarray(image["extremes"], dtype=np.float64),
        ranges=np.asarray(image["ranges"], dtype=np.float64) if "ranges" in image else None,
    )


def featurize_stored_slide(
    session: Session,
    dataset: Dataset,
    recipe: Recipe,
    progress: Callable[[float], None],
) -> SlideItems:
    """Featurize the slide, its map of items and the items' pyramid written to the store (not
    yet recorded: the caller is inside ``chunks.deferred_records``)."""
    picture = stored_picture(session, dataset)
    height, width = picture.shape

    def after_each_block(fraction: float) -> None:
        release_free_memory()  # what the blocks' threads freed, back to the system
        progress(fraction)

    with chunks.tiled_writer(
        session=session,
        dataset_id=dataset.id,
        kind=ITEM_OF_PIXEL,
        shape=(height, width),
        dtype="int32",
        tile=pyramids.CHUNK,
    ) as items:
        result = featurize_slide(picture, recipe, items.write, after_each_block)
        pyramids.write_levels_in_bands(
            session=session,
            width=width,
            height=height,
            full=items.read,
            halve=halve_mask,
            dataset_id=dataset.id,
            layer=pyramids.ITEMS,
            full_stored=True,
        )
    return result


def store_slide_arrays(
    session: Session, dataset: Dataset, result: SlideItems, chunk_rows: int
) -> None:
    """What code reads instead of the whole map: pixel counts, boxes, shared borders."""
    arrays: dict[str, NDArray[np.integer]] = {
        ITEM_SIZES: result.sizes,
        ITEM_BOXES: result.boxes,
        ITEM_BORDERS: result.borders,
    }
    for kind, array in arrays.items():
        chunks.write_array(
            session=session, dataset_id=dataset.id, kind=kind, array=array, chunk_rows=chunk_rows
        )
