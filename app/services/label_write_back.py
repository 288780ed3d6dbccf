"""A run's mask written back beside the OME-Zarr image it was made from (imported by reference
with `write_labels`), as the NGFF label image `labels/run-<id>/`: label value = cluster id + 1
(0 is no label), coloured as the workspace colours clusters. The mask is looked up band by band
from the slide's map of items, as the PNG export is, and never held whole."""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.services.deep_zoom import PALETTE
from app.services.errors import Conflict, InvalidInput
from app.services.slide_masks import MASK_BAND, run_labels
from app.store import chunks
from app.store.dataset_arrays import ITEM_OF_PIXEL
from app.store.sources.allowed import SourceRefused
from app.store.sources.label_images import write_label_image
from app.store.sources.referenced import referenced_image
from app.store.sources.tables import SourceError


@dataclass(frozen=True)
class WrittenLabels:
    name: str
    url: str
    levels: int
    n_labels: int


def write_back_labels(*, session: Session, run: Run) -> WrittenLabels:
    dataset = session.get(Dataset, run.dataset_id)
    assert dataset is not None  # a run goes with its dataset
    record = (dataset.meta or {}).get("source") or {}
    if record.get("format") != "ome-zarr":
        raise InvalidInput(
            f"run {run.id}'s dataset is not an OME-Zarr image imported by reference: labels are "
            "written back beside such images only (download the mask: result.png)"
        )
    if not record.get("write_labels"):
        raise InvalidInput(
            f'dataset {dataset.id} was imported without "write_labels": true; import it again '
            "with it to have labels written beside the image"
        )
    if run.status != "succeeded":
        raise Conflict(f"run {run.id} is {run.status}; it has no mask to write back")
    try:
        image = referenced_image(session, dataset)
        assert image is not None
        if image.current_version() != image.version:
            raise Conflict(
                f"{image.url} changed since it was imported: a mask of the old pixels is not "
                "written beside the new ones"
            )
        labels = run_labels(session, run)
        n_labels = int(labels.max()) + 1 if labels.size else 0
        name = f"run-{run.id}"
        levels = write_label_image(
            image,
            name,
            _bands(session, dataset, labels),
            MASK_BAND,
            [_rgb(PALETTE[k % len(PALETTE)]) for k in range(n_labels)],
            [{"cluster": k} for k in range(n_labels)],
        )
    except SourceRefused as exc:
        raise Conflict(f"dataset {dataset.id}'s source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise Conflict(f"the labels could not be written: {exc}") from None
    return WrittenLabels(name, f"{image.url.rstrip('/')}/labels/{name}", levels, n_labels)


def _bands(
    session: Session, dataset: Dataset, labels: NDArray[np.int32]
) -> Iterator[tuple[int, NDArray[np.integer]]]:
    image = dataset.meta["image"]
    width, height = int(image["width"]), int(image["height"])
    read = chunks.region_reader(session=session, dataset_id=dataset.id, kind=ITEM_OF_PIXEL)
    for start in range(0, height, MASK_BAND):
        items = read((start, min(start + MASK_BAND, height)), (0, width))
        yield start, labels[items] + 1


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[0:2], 16), int(hex_colour[2:4], 16), int(hex_colour[4:6], 16)
