"""Compile a dataset's live annotations into side information, one act at a time.

Every run compiles the side information at the dataset's current revision. The compiled arrays
of the last few datasets stay in this process between runs (`CompiledAnnotations`); a run then
reads the ids of the live annotations, drops what was undone or deleted, and reads and compiles
only the annotations it has not seen, instead of every annotation again. The database stays the
truth: what is kept is checked against the live ids on every call, so another process's acts,
undos and edits are never missed.
"""

import threading
from collections import OrderedDict

import numpy as np
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.services import annotations, views
from app.services.datasets import require_ready
from app.services.strokes import (
    Under,
    drawn_on_image,
    resolve_strokes,
    under_slide,
    under_whole_map,
)
from app.sideinfo import SideInformation
from app.sideinfo.compiled import CompiledAnnotations
from app.store.dataset_arrays import (
    is_slide,
    item_of_pixel_version,
    load_item_of_pixel,
    load_item_sizes,
    read_item_region,
)

# Datasets whose compiled annotations are kept: a few experts at work at once. Arrays of about
# 30 bytes per labeled item, 24 per link pair.
KEPT_DATASETS = 4

# (database, dataset id, its creation time, items, pixel map version) -> the compiled
# annotations. Ids are never reused within a database; a new featurization of an image changes
# the items its strokes cover, so it starts over.
CacheKey = tuple[str, int, str, int, str | None]
_kept: OrderedDict[CacheKey, CompiledAnnotations] = OrderedDict()
_lock = threading.Lock()


def compile_for_dataset(*, session: Session, dataset: Dataset) -> SideInformation:
    """The live annotations as side information; an image must be featurized (its strokes
    become the items under them)."""
    require_ready(dataset)
    image = dataset.kind == "image"
    key = (
        str(session.get_bind().engine.url),
        dataset.id,
        dataset.created_at.isoformat(),
        dataset.n_items,
        item_of_pixel_version(session=session, dataset=dataset) if image else None,
    )
    with _lock:  # taken out while in use: two calls never update one object at once
        compiled = _kept.pop(key, None) or CompiledAnnotations(dataset.n_items)
    live = annotations.live_ids(session=session, dataset=dataset)
    compiled.remove(compiled.ids - live)
    records = annotations.records(session=session, dataset=dataset, ids=live - compiled.ids)
    fetched = {r.id for r in records}
    if any(drawn_on_image(r) for r in records):
        records = resolve_strokes(records, _under(session, dataset))
    compiled.add(records, ids=fetched)

    def coordinates(view_id: int) -> np.ndarray:
        view = views.get_view(session=session, dataset=dataset, view_id=view_id)
        return views.view_coordinates(session=session, dataset=dataset, view=view)

    info = compiled.side_information(revision=dataset.revision, view_coordinates=coordinates)
    with _lock:
        for older in [k for k in _kept if k[:2] == key[:2]]:  # before a new featurization
            del _kept[older]
        _kept[key] = compiled
        while len(_kept) > KEPT_DATASETS:
            _kept.popitem(last=False)
    return info


def _under(session: Session, dataset: Dataset) -> Under:
    """How strokes become items on this image: its whole map, or a slide's map by region."""
    if is_slide(dataset):
        image = dataset.meta["image"]

        def read(rows: tuple[int, int], columns: tuple[int, int]) -> np.ndarray:
            return read_item_region(session=session, dataset=dataset, rows=rows, columns=columns)

        return under_slide(
            (int(image["height"]), int(image["width"])),
            read,
            dataset.n_items,
            load_item_sizes(session=session, dataset=dataset),
        )
    item_of_pixel = load_item_of_pixel(session=session, dataset=dataset)
    return under_whole_map(item_of_pixel, dataset.n_items)


def forget_compiled() -> None:
    """Drop every kept compilation (tests; a process that wants its memory back)."""
    with _lock:
        _kept.clear()
