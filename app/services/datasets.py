"""Dataset use cases: import an upload, read items and features, delete.

An upload is written in short transactions of its own (`ingest/short_transactions.py`): its
dataset is invisible until it is complete, and a bad file leaves nothing behind.
"""

import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import Annotation, Dataset, Project, User, View
from app.engine.image.featurize import chosen_channels
from app.jobs.featurize.collection_images import release_unneeded_files, waiting_source
from app.jobs.featurize.featurizer import queue_featurization
from app.jobs.featurize.free_memory import release_free_memory
from app.jobs.featurize.recipe import RecipeParams
from app.services import image_uploads
from app.services.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from app.services.ingest.detect import detect_format
from app.services.ingest.label_column import record_label_annotations
from app.services.ingest.parsed import ParsedTable
from app.services.ingest.short_transactions import UPLOADING, import_in_short_transactions
from app.services.ingest.table_readers import TABLE_READERS, TableBlocks, TableColumns
from app.services.ingest.table_sink import TableSink
from app.services.ingest.upload import UploadedFile, UploadLimits, valid_name
from app.services.job_limits import check_active_jobs
from app.services.paging import get_or_not_found, page
from app.services.source_reads import read_in_place
from app.store import chunks, dataset_arrays
from app.store.array_store import StoreUnavailable
from app.store.dataset_arrays import ITEM_IDS

log = logging.getLogger(__name__)


def import_upload(
    *,
    session: Session,
    project: Project,
    user: User,
    name: str,
    upload: UploadedFile,
    limits: UploadLimits,
    columns: TableColumns = TableColumns(),
    ground_truth_image: bytes | None = None,
) -> Dataset:
    """Validate and store an upload: a table read by its format's reader, or an image
    (`image_uploads.py`), which may come with `ground_truth_image`."""
    name = valid_name(name or upload.filename)
    if upload.size > limits.max_bytes:
        raise PayloadTooLarge(
            f"the file has {upload.size:,} bytes; the limit is {limits.max_bytes:,} bytes"
        )
    if upload.size == 0:
        raise InvalidInput("the file is empty")
    upload.stream.seek(0)
    head = upload.stream.read(16)
    kind = detect_format(head, upload.filename, upload.content_type)
    if kind == "image":
        if columns.id_column or columns.ground_truth_column or columns.label_column:
            raise InvalidInput(
                "id_column, ground_truth_column and label_column apply to tables, not images"
            )
        return image_uploads.import_image(
            session=session, project=project, user=user, name=name, upload=upload,
            limits=limits, head=head, ground_truth_image=ground_truth_image,
        )  # fmt: skip
    if ground_truth_image is not None:
        raise InvalidInput("a ground_truth image applies to image uploads, not tables")
    if kind == "bad_image":
        raise UnsupportedMediaType(
            f"{upload.filename!r} was sent as an image but is not a PNG, JPEG or TIFF file"
        )
    table = TABLE_READERS[kind](upload.stream, columns, limits.chunk_rows)
    return stream_table(
        session=session,
        project=project,
        user=user,
        name=name,
        source_filename=upload.filename,
        table=table,
        chunk_rows=limits.chunk_rows,
        columns=columns,
    )


def stream_table(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    source_filename: str,
    table: TableBlocks,
    chunk_rows: int,
    columns: TableColumns,
    source: dict[str, Any] | None = None,
    read_back: Callable[[], Iterator[np.ndarray]] | None = None,
) -> Dataset:
    """A table dataset from row blocks, each checked and written as it comes (`TableSink`),
    in short write transactions (`short_transactions.py`): nobody waits while it is read. A
    refusal removes everything. With ``source`` (``meta.source``) and ``read_back`` the table
    is read in place (imported by reference): its values are not written to the store. The
    label column's labels (``table.labels``) become ``user``'s label annotations, one act, in
    the transaction that makes the dataset ready."""
    dataset = Dataset(
        project_id=project.id,
        name=valid_name(name),
        kind="table",
        status="ready",
        n_items=0,
        n_features=len(table.feature_names),
        feature_names=table.feature_names,
        dtype=table.dtype,
        id_column=columns.id_column,
        ground_truth_column=columns.ground_truth_column,
        source_filename=source_filename,
        meta={},
        created_by_id=user.id if user else None,
    )
    pca_view = View(name="PCA", method="pca", params={})

    def reserve() -> None:
        pca_view.dataset_id = dataset.id
        session.add(pca_view)

    def work() -> None:
        with TableSink(
            session=session,
            dataset=dataset,
            pca_view=pca_view,
            feature_names=table.feature_names,
            dtype=table.dtype,
            chunk_rows=chunk_rows,
            id_column=columns.id_column,
            ground_truth_column=columns.ground_truth_column,
            read_back=read_back,
        ) as sink:
            for features, ids, truth in table.blocks:
                sink.add(features, ids, truth)
            facts = sink.finish()
        dataset.n_items = facts["n_items"]
        dataset.ground_truth_classes = facts["ground_truth_classes"]
        dataset.meta = {
            "ignored_columns": table.ignored_columns,
            "feature_stats": facts["feature_stats"],
            **({"model_features": facts["model_features"]} if facts["model_features"] else {}),
            **({"source": source} if source else {}),
            **({"label_column": table.labels.name} if table.labels else {}),
        }

    def finish() -> None:
        if table.labels is not None:
            record_label_annotations(
                session=session, dataset=dataset, user=user, labels=table.labels
            )

    try:
        import_in_short_transactions(session, [dataset], work, reserve=reserve, finish=finish)
    finally:
        # The blocks' arrays are freed in the request's thread arena, which glibc keeps for
        # reuse: a series of uploads left the server 400 MiB larger with no array alive.
        release_free_memory()
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
    return stream_table(
        session=session,
        project=project,
        user=user,
        name=name,
        source_filename=source_filename,
        table=TableBlocks(
            blocks=[(table.features, table.item_ids, truth)],
            feature_names=table.feature_names,
            dtype=np.dtype(table.features.dtype).name,
            ignored_columns=table.ignored_columns,
        ),
        chunk_rows=chunk_rows,
        columns=TableColumns(
            id_column=id_column if table.item_ids is not None else None,
            ground_truth_column=ground_truth_column if truth is not None else None,
        ),
    )


def get_dataset(*, session: Session, dataset_id: int) -> Dataset:
    dataset = get_or_not_found(session, Dataset, dataset_id, "dataset")
    if dataset.status == UPLOADING:  # not there yet for anyone
        raise NotFound(f"no dataset with id {dataset_id}")
    return dataset


def list_datasets(
    *, session: Session, project: Project, limit: int, offset: int
) -> tuple[list[Dataset], int]:
    query = select(Dataset).where(Dataset.project_id == project.id, Dataset.status != UPLOADING)
    return page(session, query, Dataset.id, limit, offset)


def delete_dataset(*, session: Session, dataset: Dataset) -> None:
    waited = waiting_source(dataset.featurization) is not None
    chunks.forget_datasets(session=session, dataset_ids=[dataset.id])  # arrays, after commit
    session.delete(dataset)  # annotations, runs and array rows go with it (ON DELETE CASCADE)
    session.flush()
    if waited:  # the last image a collection's file kept waiting for: the file goes too
        release_unneeded_files(session)


def remove_deleted_directories(*, session: Session, dataset_id: int, run_ids: list[int]) -> None:
    """Once a dataset's deletion has committed: its and its runs' directories go from the
    store (`chunks.remove_owners_directories`); a store that cannot be reached leaves them to
    the next start-up's sweep."""
    try:
        chunks.remove_owners_directories(session=session, dataset_ids=[dataset_id], run_ids=run_ids)
    except StoreUnavailable as exc:
        log.warning(
            "dataset %s: its directories are left to the start-up sweep: %s", dataset_id, exc
        )


def read_items(
    *, session: Session, dataset: Dataset, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Rows [offset, offset + limit) with their id, feature values and ground truth."""
    if dataset.status != "ready":
        return []
    start, stop = offset, min(offset + limit, dataset.n_items)
    if stop <= start:
        return []
    values = read_in_place(
        dataset,
        lambda: dataset_arrays.read_features(
            session=session, dataset=dataset, start=start, stop=stop
        ),
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
    """Items exist only once an image is featurized (a table imported by reference: once it
    has been read)."""
    if dataset.status == "ready":
        return
    record = dataset.featurization or {}
    reads = bool(record.get("reads_source"))
    if dataset.status == "failed":
        reason = record.get("error", "unknown")
        if reads:
            raise Conflict(
                f"dataset {dataset.id} could not be read from its source ({reason}); mend the "
                "source and import it again"
            )
        raise Conflict(
            f"dataset {dataset.id}'s featurization failed ({reason}); featurize it again"
        )
    progress = record.get("progress", 0.0)
    if reads:
        raise Conflict(
            f"dataset {dataset.id} is being read from its source ({100 * progress:.0f}% done) "
            "for its statistics and view; its items can be used when it is ready"
        )
    raise Conflict(
        f"dataset {dataset.id} is being featurized ({100 * progress:.0f}% done); its items "
        "exist when it is ready"
    )


def load_features(*, session: Session, dataset: Dataset) -> np.ndarray:
    require_ready(dataset)
    return dataset_arrays.load_features(session=session, dataset=dataset)


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
    image = dataset.meta.get("image") or {}  # a collection's image may wait for its file
    try:
        engine_recipe = recipe.recipe()
        chosen_channels(engine_recipe, () if image.get("photo") else image.get("channels") or ())
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
