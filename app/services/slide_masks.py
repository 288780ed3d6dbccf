"""A run's mask on a slide, made where it is read: never stored whole, never held whole.

A mask pixel is the run's label of the pixel's item, so a tile of the mask at any zoom is the
run's labels looked up in the same tile of the slide's items pyramid (written at
featurization, `app/jobs/featurize/slide_featurizer.py`), and the full-resolution PNG is its
rows looked up band by band and streamed (`masks.png_stream`). A run on a region of the slide
(`app/jobs/run/region_runs.py`) labels only the items there: its tiles show the region (the
rest clear), a tile outside it is 404, and its PNG is the region's.
"""

import threading
from collections import OrderedDict
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.engine.image.deep_zoom import DeepZoom
from app.engine.image.masks import MAX_CLUSTER_ID, png_stream
from app.services.errors import Conflict, NotFound
from app.store import chunks, pyramids
from app.store.dataset_arrays import ITEM_OF_PIXEL
from app.store.run_arrays import LABELS, read_labels

MASK_BAND = 1024  # rows of the full-resolution PNG looked up at once
_KEPT_LABELS = 8
_labels: OrderedDict[str, NDArray[np.int32]] = OrderedDict()
_labels_lock = threading.Lock()


def run_labels(session: Session, run: Run) -> NDArray[np.int32]:
    """The run's labels, kept for the next tiles (keyed by where they are stored: a result is
    never rewritten in place)."""
    row = chunks.stored(session, None, LABELS, run.id)
    if row is None:
        raise Conflict(f"run {run.id} is {run.status}; it has no result")
    with _labels_lock:
        if row.key in _labels:
            _labels.move_to_end(row.key)
            return _labels[row.key]
    labels = read_labels(session=session, run_id=run.id)
    if labels is None:
        raise NotFound(f"run {run.id}'s labels are missing from the array store")
    with _labels_lock:
        _labels[row.key] = labels
        while len(_labels) > _KEPT_LABELS:
            _labels.popitem(last=False)
    return labels


def mask_region(
    session: Session,
    dataset: Dataset,
    run: Run,
    level: int,
    top_level: int,
    box: tuple[int, int, int, int],
) -> NDArray[np.int32]:
    """Cluster ids of a box (x0, y0, x1, y1) of ``level`` of the mask's pyramid."""
    labels = run_labels(session, run)
    x0, y0, x1, y1 = box
    if level == top_level:
        items = chunks.read_region(
            session=session,
            dataset_id=dataset.id,
            kind=ITEM_OF_PIXEL,
            rows=(y0, y1),
            columns=(x0, x1),
        )
    else:
        items = pyramids.read_level_region(
            session=session,
            level=level,
            rows=(y0, y1),
            columns=(x0, x1),
            dataset_id=dataset.id,
            layer=pyramids.ITEMS,
        )
    if items is None:
        raise NotFound(f"dataset {dataset.id}'s items are missing from the array store")
    return labels[items]


def check_in_region(run: Run, zoom: DeepZoom, level: int, box: tuple[int, int, int, int]) -> None:
    """A region run's tile must meet its region (at that level's scale): else 404, saying
    which region the run covers."""
    region = run.region
    if region is None:
        return
    scale = 2 ** (zoom.max_level - level)  # level-0 pixels per pixel of this level
    x0, y0, x1, y1 = (v * scale for v in box)
    rx, ry = region["x"], region["y"]
    if x1 <= rx or y1 <= ry or x0 >= rx + region["width"] or y0 >= ry + region["height"]:
        raise NotFound(
            f"run {run.id} segmented the region x {rx} .. {rx + region['width'] - 1}, y {ry} "
            f".. {ry + region['height'] - 1} of the slide; this tile lies outside it (run "
            "again with that region, or without one for the whole slide)"
        )


def mask_png(session: Session, dataset: Dataset, run: Run) -> Iterator[bytes]:
    """The full-resolution mask as a PNG (8-bit, 16-bit beyond 255 clusters), streamed: it
    reads the store without ``session`` once started (the request's session is gone by then).
    A region run's covers its region."""
    labels = run_labels(session, run)
    if labels.size and int(labels.max()) > MAX_CLUSTER_ID:
        raise Conflict(f"run {run.id} has more clusters than a PNG mask can name")
    image = dataset.meta["image"]
    x, y = 0, 0
    width, height = int(image["width"]), int(image["height"])
    if run.region is not None:
        x, y = run.region["x"], run.region["y"]
        width, height = run.region["width"], run.region["height"]
    read = chunks.region_reader(session=session, dataset_id=dataset.id, kind=ITEM_OF_PIXEL)

    def bands() -> Iterator[NDArray[np.int32]]:
        for start in range(y, y + height, MASK_BAND):
            yield labels[read((start, min(start + MASK_BAND, y + height)), (x, x + width))]

    sixteen_bit = bool(labels.size) and int(labels.max()) >= 256
    return png_stream(width, height, bands(), sixteen_bit)
