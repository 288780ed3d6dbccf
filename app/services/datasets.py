"""Dataset use cases: import an upload, read items and features, delete.

An upload is parsed and validated completely before the first row is written, and all rows
are written in the caller's transaction, so a bad file leaves nothing behind.
"""

from collections.abc import Iterable
from typing import Any, BinaryIO

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import Annotation, Dataset, Project, User
from app.engine.image.image_file import TIFF_MAGICS
from app.engine.image.masks import decode_index_png
from app.jobs.featurizer import queue_featurization
from app.jobs.recipe import RecipeParams
from app.services import deep_zoom
from app.services.errors import (
    Conflict,
    InvalidInput,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from app.services.image_rows import insert_image_dataset
from app.services.ingest.csv_table import csv_blocks, plan_csv
from app.services.ingest.detect import detect_format
from app.services.ingest.image_file import MAX_PIXELS, parse_image, whole_limit
from app.services.ingest.npy_array import npy_blocks, plan_npy
from app.services.ingest.parquet_table import open_parquet, parquet_blocks
from app.services.ingest.parsed import ParsedImage, ParsedTable
from app.services.ingest.table_sink import TableSink
from app.services.job_limits import check_active_jobs
from app.services.paging import get_or_not_found, page
from app.services.slides import create_slide_dataset, slide_header
from app.store import chunks, dataset_arrays
from app.store.dataset_arrays import (
    DISPLAY_IMAGE,
    FEATURES,
    IMAGE,
    ITEM_IDS,
    PIXEL_GROUND_TRUTH,
)


def import_upload(
    *,
    session: Session,
    project: Project,
    user: User,
    name: str,
    stream: BinaryIO,
    filename: str,
    content_type: str | None,
    size: int,
    max_bytes: int,
    chunk_rows: int,
    id_column: str | None = None,
    ground_truth_column: str | None = None,
    ground_truth_image: bytes | None = None,
    max_active_jobs: int | None = None,
    max_image_pixels: int = MAX_PIXELS,
    whole_image_pixels: int = MAX_PIXELS,
) -> Dataset:
    """Validate and store an upload. An image may come with `ground_truth_image`, a PNG index
    image of the same size (pixel value = class; 255 = unknown); its featurization counts
    toward the user's `max_active_jobs` (429 beyond, nothing stored). A TIFF above
    `whole_image_pixels` is a slide (`slides.py`), read in bands."""
    name = valid_name(name or filename)
    if size > max_bytes:
        raise PayloadTooLarge(f"the file has {size:,} bytes; the limit is {max_bytes:,} bytes")
    if size == 0:
        raise InvalidInput("the file is empty")
    stream.seek(0)
    head = stream.read(16)
    match detect_format(head, filename, content_type):
        case "image":
            if id_column or ground_truth_column:
                raise InvalidInput("id_column and ground_truth_column apply to tables, not images")
            if head.startswith(TIFF_MAGICS):
                header = slide_header(stream, filename, size)
                if header.width * header.height > whole_image_pixels:
                    if ground_truth_image is not None:
                        raise InvalidInput(
                            "a ground_truth image is taken for images decoded whole (up to "
                            f"{whole_image_pixels:,} pixels, IMAGE_WHOLE_PIXELS), not for slides"
                        )
                    check_active_jobs(session, user, max_active_jobs)
                    return create_slide_dataset(
                        session=session,
                        project=project,
                        user=user,
                        name=name,
                        stream=stream,
                        filename=filename,
                        size=size,
                        max_pixels=max_image_pixels,
                    )
            image = parse_image(
                stream, filename, *whole_limit(max_image_pixels, whole_image_pixels)
            )
            check_active_jobs(session, user, max_active_jobs)
            return create_image_dataset(
                session=session,
                project=project,
                user=user,
                name=name,
                image=image,
                source_filename=filename,
                ground_truth_image=ground_truth_image,
                chunk_rows=chunk_rows,
            )
        case _ if ground_truth_image is not None:
            raise InvalidInput("a ground_truth image applies to image uploads, not tables")
        case "bad_image":
            raise UnsupportedMediaType(
                f"{filename!r} was sent as an image but is not a PNG, JPEG or TIFF file"
            )
        case "npy":
            if id_column or ground_truth_column:
                raise InvalidInput(
                    "id_column and ground_truth_column name CSV columns; an NPY array has none"
                )
            npy, array = plan_npy(stream)
            blocks: Iterable[Block] = ((b, None, None) for b in npy_blocks(array, npy, chunk_rows))
            names, dtype, ignored = npy.feature_names, npy.dtype, []
        case "parquet":
            parquet, file = open_parquet(
                stream, id_column=id_column, ground_truth_column=ground_truth_column
            )
            blocks = parquet_blocks(file, parquet, chunk_rows)
            names, dtype, ignored = parquet.feature_names, parquet.dtype, parquet.ignored_names
        case _:
            plan = plan_csv(stream, id_column=id_column, ground_truth_column=ground_truth_column)
            blocks = csv_blocks(stream, plan)
            names, dtype, ignored = plan.feature_names, "float64", plan.ignored_names
    return _stream_table(
        session=session,
        project=project,
        user=user,
        name=name,
        source_filename=filename,
        feature_names=names,
        dtype=dtype,
        blocks=blocks,
        chunk_rows=chunk_rows,
        id_column=id_column or None,
        ground_truth_column=ground_truth_column or None,
        ignored_columns=ignored,
    )


Block = tuple[np.ndarray, list[str] | None, list[str] | None]


def _stream_table(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    source_filename: str,
    feature_names: list[str],
    dtype: str,
    blocks: Iterable[Block],
    chunk_rows: int,
    id_column: str | None,
    ground_truth_column: str | None,
    ignored_columns: list[str],
) -> Dataset:
    """A table dataset from row blocks, each checked and written as it comes (`TableSink`);
    the row is complete once the last block is in. A refusal rolls everything back."""
    dataset = Dataset(
        project_id=project.id,
        name=valid_name(name),
        kind="table",
        status="ready",
        n_items=0,
        n_features=len(feature_names),
        feature_names=feature_names,
        dtype=dtype,
        id_column=id_column,
        ground_truth_column=ground_truth_column,
        source_filename=source_filename,
        meta={},
        created_by_id=user.id if user else None,
    )
    session.add(dataset)
    session.flush()
    with TableSink(
        session=session,
        dataset=dataset,
        feature_names=feature_names,
        dtype=dtype,
        chunk_rows=chunk_rows,
        id_column=id_column,
        ground_truth_column=ground_truth_column,
    ) as sink:
        for features, ids, truth in blocks:
            sink.add(features, ids, truth)
        facts = sink.finish()
    dataset.n_items = facts["n_items"]
    dataset.ground_truth_classes = facts["ground_truth_classes"]
    dataset.meta = {"ignored_columns": ignored_columns, "feature_stats": facts["feature_stats"]}
    session.flush()
    return dataset


def create_table_dataset(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    table: ParsedTable,
    source_filename: str,
    chunk_rows: int,
    id_column: str | None = None,
    ground_truth_column: str | None = None,
) -> Dataset:
    """A table held in memory (the demo data) as a dataset, through the same checks."""
    truth = None
    if table.ground_truth is not None:
        classes = table.ground_truth_classes or []
        truth = [classes[c] if c >= 0 else "" for c in table.ground_truth.tolist()]
    return _stream_table(
        session=session,
        project=project,
        user=user,
        name=name,
        source_filename=source_filename,
        feature_names=table.feature_names,
        dtype=np.dtype(table.features.dtype).name,
        blocks=[(table.features, table.item_ids, truth)],
        chunk_rows=chunk_rows,
        id_column=id_column if table.item_ids is not None else None,
        ground_truth_column=ground_truth_column if truth is not None else None,
        ignored_columns=table.ignored_columns,
    )


def create_image_dataset(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    image: ParsedImage,
    source_filename: str,
    ground_truth_image: bytes | None = None,
    chunk_rows: int = 65_536,
    collection: str | None = None,
) -> Dataset:
    """Store the image and queue its featurization with the default recipe (the caller submits
    it after committing); pixels become items when it finishes. `collection`: the name of the
    images uploaded with it (`meta.collection`)."""
    truth, classes = None, None
    if ground_truth_image is not None:
        truth, classes = _pixel_classes(ground_truth_image, (image.height, image.width))
    dataset = insert_image_dataset(
        session=session,
        project=project,
        user=user,
        name=valid_name(name),
        source_filename=source_filename,
        image={
            "format": image.format,
            "width": image.width,
            "height": image.height,
            "mode": image.mode,
            "dtype": image.dtype,
            "channels": image.channel_names,
            "bytes": len(image.data),
        },
        ground_truth_classes=classes,
        collection=collection,
    )
    chunks.write_blob(session=session, dataset_id=dataset.id, kind=IMAGE, data=image.data)
    if image.display is not None:
        chunks.write_blob(
            session=session, dataset_id=dataset.id, kind=DISPLAY_IMAGE, data=image.display
        )
    deep_zoom.add_picture_pyramid(session=session, dataset=dataset, shown=image.shown)
    if truth is not None:
        chunks.write_array(
            session=session,
            dataset_id=dataset.id,
            kind=PIXEL_GROUND_TRUTH,
            array=truth.ravel(),
            chunk_rows=chunk_rows,
        )
    return dataset


UNKNOWN_CLASS_VALUE = 255  # the usual "ignore" value of segmentation ground truths


def _pixel_classes(data: bytes, shape: tuple[int, int]) -> tuple[np.ndarray, list[str]]:
    """Class codes per pixel (-1 unknown) and class names (the pixel values, as text)."""
    try:
        values = decode_index_png(data, shape)
    except ValueError as exc:
        raise InvalidInput(f"ground_truth: {exc}") from None
    present = np.unique(values[values != UNKNOWN_CLASS_VALUE])
    if present.size == 0:
        raise InvalidInput("ground_truth: every pixel is 255 (unknown); no class is given")
    codes = np.searchsorted(present, values).astype(np.int32)
    codes[values == UNKNOWN_CLASS_VALUE] = -1
    return codes, [str(int(v)) for v in present]


def get_dataset(*, session: Session, dataset_id: int) -> Dataset:
    return get_or_not_found(session, Dataset, dataset_id, "dataset")


def list_datasets(
    *, session: Session, project: Project, limit: int, offset: int
) -> tuple[list[Dataset], int]:
    query = select(Dataset).where(Dataset.project_id == project.id)
    return page(session, query, Dataset.id, limit, offset)


def delete_dataset(*, session: Session, dataset: Dataset) -> None:
    chunks.forget_datasets(session=session, dataset_ids=[dataset.id])  # arrays, after commit
    session.delete(dataset)  # annotations, runs and array rows go with it (ON DELETE CASCADE)
    session.flush()


def read_items(
    *, session: Session, dataset: Dataset, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Rows [offset, offset + limit) with their id, feature values and ground truth."""
    if dataset.status != "ready":
        return []
    start, stop = offset, min(offset + limit, dataset.n_items)
    if stop <= start:
        return []
    values = chunks.read_array(
        session=session,
        dataset_id=dataset.id,
        kind=FEATURES,
        dtype=dataset.dtype,
        n_columns=dataset.n_features,
        start=start,
        stop=stop,
    )
    ids = (
        chunks.read_strings(
            session=session, dataset_id=dataset.id, kind=ITEM_IDS, start=start, stop=stop
        )
        if dataset.id_column
        else [str(i) for i in range(start, stop)]
    )
    truth: list[str | None] = [None] * (stop - start)
    codes = dataset_arrays.load_ground_truth(
        session=session, dataset=dataset, start=start, stop=stop
    )
    if codes is not None and dataset.ground_truth_classes is not None:
        classes = dataset.ground_truth_classes
        truth = [classes[c] if c >= 0 else None for c in codes.tolist()]
    return [
        {"index": start + k, "id": ids[k], "values": values[k].tolist(), "ground_truth": truth[k]}
        for k in range(stop - start)
    ]


def feature_blocks(*, session: Session, dataset: Dataset) -> Any:
    require_ready(dataset)
    return dataset_arrays.feature_blocks(session=session, dataset=dataset)


def require_ready(dataset: Dataset) -> None:
    """Items exist only once an image is featurized."""
    if dataset.status == "ready":
        return
    if dataset.status == "failed":
        reason = (dataset.featurization or {}).get("error", "unknown")
        raise Conflict(
            f"dataset {dataset.id}'s featurization failed ({reason}); featurize it again"
        )
    progress = (dataset.featurization or {}).get("progress", 0.0)
    raise Conflict(
        f"dataset {dataset.id} is being featurized ({100 * progress:.0f}% done); its items "
        "exist when it is ready"
    )


def load_features(*, session: Session, dataset: Dataset) -> np.ndarray:
    require_ready(dataset)
    return dataset_arrays.load_features(session=session, dataset=dataset)


def valid_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise InvalidInput("dataset name must be 1 to 200 characters")
    return name


ITEM_INDEXED_KINDS = ("label", "must_link", "cannot_link", "boundary")


def refeaturize(
    *,
    session: Session,
    dataset: Dataset,
    recipe: RecipeParams,
    user: User | None = None,
    max_active_jobs: int | None = None,
) -> Dataset:
    """Queue a new featurization of an image with `recipe` (superseding one in progress), on
    `user`'s account of background work (429 beyond `max_active_jobs`).

    Scribbles are kept in pixel coordinates and follow the new items; annotations that name
    items by index would point at the wrong ones, so they must be undone first."""
    if dataset.kind != "image":
        raise InvalidInput(f"dataset {dataset.id} is a table; only images are featurized")
    try:
        engine_recipe = recipe.recipe()
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if dataset_arrays.is_slide(dataset) and engine_recipe.superpixels == "never":
        raise InvalidInput(
            f"dataset {dataset.id} is a slide: its items are superpixels (one item per pixel "
            f"would be {dataset.meta['image']['width'] * dataset.meta['image']['height']:,} "
            "items); use superpixels 'auto' or 'always'"
        )
    indexed = session.scalar(
        select(func.count())
        .select_from(Annotation)
        .where(
            Annotation.dataset_id == dataset.id,
            Annotation.deleted_at.is_(None),
            Annotation.kind.in_(ITEM_INDEXED_KINDS),
        )
    )
    if indexed:
        raise Conflict(
            f"dataset {dataset.id} has {indexed} live annotation(s) that name items by index "
            "(labels, links, boundaries); a new featurization changes the items, so undo them "
            "first (scribbles are kept: they are drawn in pixels)"
        )
    user_id = user.id if user else None
    requested_by = (dataset.featurization or {}).get("requested_by")
    if not (dataset.status == "featurizing" and requested_by == user_id):
        check_active_jobs(session, user, max_active_jobs)  # superseding one's own adds nothing
    queue_featurization(dataset, engine_recipe.to_dict(), requested_by=user_id)
    session.flush()
    return dataset
