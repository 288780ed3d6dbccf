"""The arrays a dataset is stored as, by chunk kind, and whole-array reads of them."""

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.store import chunks
from app.store.sources.referenced import referenced_table

FEATURES = "features"
# Rows per block when a dataset imported by reference is read block by block from its source.
SOURCE_BLOCK_ROWS = 65_536
# What runs model on a wide table: its leading principal components (n x k float32), stored at
# upload; ``meta.model_features`` says how many and of how many columns. Absent on tables narrow
# enough to model as they are.
MODEL_FEATURES = "model_features"
ITEM_IDS = "item_ids"
GROUND_TRUTH = "ground_truth"
IMAGE = "image"  # the file as uploaded
# A PNG for the browser when the upload is not one it shows well (TIFF; 16-bit or many channels,
# as a composite of the channels).
DISPLAY_IMAGE = "display_image"
# Image datasets, once featurized: the item of every pixel (int32, H*W in raster order), the
# uploaded ground-truth index image per pixel (int32), and the fitted reduction (an NPZ blob).
ITEM_OF_PIXEL = "item_of_pixel"
PIXEL_GROUND_TRUTH = "pixel_ground_truth"
REDUCTION = "reduction"
# A slide's pixels as decoded (H, W, C, the file's dtype, tiled), read block by block; once
# featurized, its items' pixel counts (int64), bounding boxes (n, 4: x0, y0, x1, y1 inclusive)
# and the pairs of items that touch with the length of their shared border (n, 3), since no
# code may hold its map of pixels to items (ITEM_OF_PIXEL, tiled (H, W) for a slide) whole.
SLIDE_PIXELS = "slide_pixels"
ITEM_SIZES = "item_sizes"
ITEM_BOXES = "item_boxes"
ITEM_BORDERS = "item_borders"


def feature_blocks(*, session: Session, dataset: Dataset) -> Iterator[NDArray]:
    """The feature matrix chunk by chunk, in row order (a dataset imported by reference: read
    in place, block by block, from its source)."""
    source = referenced_table(session, dataset)
    if source is not None:
        return source.blocks(SOURCE_BLOCK_ROWS)
    return chunks.iter_array_blocks(session=session, **_feature_array(dataset))


def load_features(*, session: Session, dataset: Dataset) -> NDArray:
    """The whole matrix, its chunks read concurrently straight into one array."""
    return read_features(session=session, dataset=dataset)


def read_features(
    *, session: Session, dataset: Dataset, start: int = 0, stop: int | None = None
) -> NDArray:
    """Rows [start, stop) of the features: from the store, or in place from the source."""
    source = referenced_table(session, dataset)
    if source is not None:
        return source.read(start, stop)
    return chunks.read_array(session=session, **_feature_array(dataset), start=start, stop=stop)


def _feature_array(dataset: Dataset) -> dict[str, Any]:
    return {
        "dataset_id": dataset.id,
        "kind": FEATURES,
        "dtype": dataset.dtype,
        "n_columns": dataset.n_features,
    }


def chunked_features(*, session: Session, dataset: Dataset, rows_per_task: int) -> Any:
    """What runs model (`load_model_features`) as a lazy dask array whose tasks read the
    store's chunks (fits past one machine, the methods' chunked/ folders)."""
    if not dataset.meta.get("model_features"):
        source = referenced_table(session, dataset)
        if source is not None:  # each task reads its rows from the source itself
            return source.dask_array(rows_per_task)
    kind = MODEL_FEATURES if dataset.meta.get("model_features") else FEATURES
    return chunks.dask_array(
        session=session, dataset_id=dataset.id, kind=kind, rows_per_task=rows_per_task
    )


def model_width(dataset: Dataset) -> int:
    """How many features runs model: a wide table's stored components, else its columns."""
    model = dataset.meta.get("model_features")
    return int(model["components"]) if model else dataset.n_features


def load_model_features(*, session: Session, dataset: Dataset) -> NDArray:
    """What runs and questions model: a wide table's leading principal components (stored at
    upload, MODEL_FEATURES), else the features themselves."""
    if not dataset.meta.get("model_features"):
        return load_features(session=session, dataset=dataset)
    return chunks.read_array(
        session=session,
        dataset_id=dataset.id,
        kind=MODEL_FEATURES,
        dtype="float32",
        n_columns=model_width(dataset),
    )


def load_ground_truth(
    *, session: Session, dataset: Dataset, start: int = 0, stop: int | None = None
) -> NDArray[np.int32] | None:
    """Class codes of items [start, stop) (-1 = unknown), or None without a ground truth."""
    if dataset.ground_truth_classes is None:
        return None
    return chunks.read_array(
        session=session,
        dataset_id=dataset.id,
        kind=GROUND_TRUTH,
        dtype="int32",
        n_columns=None,
        start=start,
        stop=stop,
    )


def chunked_ground_truth(*, session: Session, dataset: Dataset, rows_per_task: int) -> Any:
    """The class codes as a lazy dask array read by the tasks themselves, or None."""
    if dataset.ground_truth_classes is None:
        return None
    return chunks.dask_array(
        session=session, dataset_id=dataset.id, kind=GROUND_TRUTH, rows_per_task=rows_per_task
    )


def load_item_of_pixel(*, session: Session, dataset: Dataset) -> NDArray[np.int32]:
    """An image dataset's (H, W) map from pixels to items."""
    shape = tuple(dataset.featurization["shape"]) if dataset.featurization else (0, 0)
    flat = chunks.read_array(
        session=session, dataset_id=dataset.id, kind=ITEM_OF_PIXEL, dtype="int32", n_columns=None
    )
    return flat.reshape(shape)


def load_pixel_ground_truth(*, session: Session, dataset: Dataset) -> NDArray[np.int32] | None:
    """Class code per pixel (-1 = unknown) of an image with an uploaded ground truth."""
    meta = dataset.meta.get("image", {})
    flat = chunks.read_array(
        session=session,
        dataset_id=dataset.id,
        kind=PIXEL_GROUND_TRUTH,
        dtype="int32",
        n_columns=None,
    )
    if flat.size == 0:
        return None
    return flat.reshape(int(meta["height"]), int(meta["width"]))


def load_item_ids(*, session: Session, dataset: Dataset) -> list[str]:
    """Each item's id: the dataset's id column, or the row position as text."""
    if dataset.id_column:
        return chunks.read_strings(session=session, dataset_id=dataset.id, kind=ITEM_IDS)
    return [str(i) for i in range(dataset.n_items)]


def item_of_pixel_version(*, session: Session, dataset: Dataset) -> str | None:
    """What identifies an image dataset's current pixel-to-item map (its key in the store: a new
    featurization writes a new one), or None before featurization."""
    row = chunks.stored(session, dataset.id, ITEM_OF_PIXEL)
    return None if row is None else row.key


def is_slide(dataset: Dataset) -> bool:
    """An image stored in tiles and featurized block by block (`app/services/slides.py`)."""
    return dataset.kind == "image" and bool(dataset.meta.get("image", {}).get("tiled"))


def load_item_borders(*, session: Session, dataset: Dataset) -> NDArray[np.int64]:
    """A slide's touching items: (m, 3) rows of item a, item b and their shared border."""
    borders = chunks.read_array(
        session=session, dataset_id=dataset.id, kind=ITEM_BORDERS, dtype="int64", n_columns=3
    )
    return borders.reshape(-1, 3).astype(np.int64, copy=False)


def load_item_sizes(*, session: Session, dataset: Dataset) -> NDArray[np.int64]:
    """A slide's pixel count per item."""
    return chunks.read_array(
        session=session, dataset_id=dataset.id, kind=ITEM_SIZES, dtype="int64", n_columns=None
    ).astype(np.int64, copy=False)


def load_item_boxes(*, session: Session, dataset: Dataset) -> NDArray[np.int32]:
    """A slide's bounding box of every item: (n, 4) rows of x0, y0, x1, y1, inclusive."""
    boxes = chunks.read_array(
        session=session, dataset_id=dataset.id, kind=ITEM_BOXES, dtype="int32", n_columns=4
    )
    return boxes.reshape(-1, 4)


def read_item_boxes(*, session: Session, dataset: Dataset, items: list[int]) -> NDArray[np.int32]:
    """A slide's bounding boxes (x0, y0, x1, y1, inclusive) of ``items``."""
    return load_item_boxes(session=session, dataset=dataset)[np.asarray(items, dtype=np.int64)]


def read_item_region(
    *, session: Session, dataset: Dataset, rows: tuple[int, int], columns: tuple[int, int]
) -> NDArray[np.int32]:
    """The items of a region of a slide's pixels (its tiled map)."""
    region = chunks.read_region(
        session=session, dataset_id=dataset.id, kind=ITEM_OF_PIXEL, rows=rows, columns=columns
    )
    if region is None:
        raise FileNotFoundError(f"dataset {dataset.id} has no map of pixels to items")
    return region.astype(np.int32, copy=False)
