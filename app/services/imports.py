"""Datasets imported by reference: a table where it already lives (a Parquet file or dataset,
a CSV file or folder of them, an NPY file, a Zarr array or an AnnData file under a prefix the
operator opened in IMPORT_SOURCES), registered and read in place, never copied into the store.

The import reads metadata only (Parquet footers, an NPY header, a Zarr array's document; a CSV,
which has none, is counted once without parsing its values) and answers; the dataset is then
read once in the background, block by block, for what it needs of the whole table
(`source_reading.py`: statistics, the PCA view, a wide table's components, ids and classes; a
label column's labels become label annotations), and is `ready` after it. Those
derived arrays are ours; the values stay in the source, read again where needed (item pages,
runs on this machine or on Dask workers, exports).
Each object's version (ETag or mtime) is recorded: a run or export that finds one changed is
refused (409) naming it."""

from dataclasses import dataclass, replace
from typing import Literal

from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.jobs.featurize.featurizer import queue_source_read
from app.services.errors import Conflict, InvalidInput
from app.services.image_imports import import_image_by_reference
from app.services.ingest.checks import require_label_apart
from app.services.ingest.upload import UploadLimits, valid_name
from app.store.sources.allowed import SourceRefused, allowed_source
from app.store.sources.binding import sources_of
from app.store.sources.images import image_format
from app.store.sources.referenced import changed_objects, referenced_table, source_record
from app.store.sources.tables import NAMED_COLUMNS, SourceError, inspect_table

SourceFormat = Literal["auto", "parquet", "npy", "zarr", "h5ad", "csv", "tiff", "ome-zarr"]


def open_prefixes(session: Session) -> list[str]:
    """The prefixes the operator opened for import by reference (URLs only, never options)."""
    return sorted(sources_of(session))


@dataclass(frozen=True)
class ImportRequest:
    name: str
    url: str
    format: SourceFormat = "auto"
    columns: list[str] | None = None
    id_column: str | None = None
    ground_truth_column: str | None = None
    label_column: str | None = None  # the expert's labels: label annotations once it is read
    write_labels: bool = False  # an OME-Zarr image: runs' masks may be written beside it


def import_by_reference(
    *,
    session: Session,
    project: Project,
    user: User | None,
    request: ImportRequest,
    limits: UploadLimits,
) -> Dataset:
    """Register the table (or image: `image_imports.py`) at ``request.url`` from its
    metadata, queued to be read in the background (the caller commits and submits it); 4xx
    naming the object and column on any problem the metadata shows, nothing registered."""
    name = valid_name(request.name)
    try:
        allowed = allowed_source(request.url, sources_of(session))
    except SourceRefused as exc:
        raise InvalidInput(f"url: {exc}") from None
    try:
        image = image_format(allowed.protocol, allowed.path, allowed.options, request.format)
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None
    if image is not None:
        if (
            request.columns
            or request.id_column
            or request.ground_truth_column
            or request.label_column
        ):
            raise InvalidInput(
                "columns, id_column, ground_truth_column and label_column name a table's "
                "columns; an image's items are its pixels"
            )
        return import_image_by_reference(
            session=session, project=project, user=user, name=name, allowed=allowed,
            format=image, max_pixels=limits.max_image_pixels,
            max_active_jobs=limits.max_active_jobs, write_labels=request.write_labels,
        )  # fmt: skip
    if request.write_labels:
        raise InvalidInput("write_labels applies to OME-Zarr images: a table has no labels/")
    require_label_apart(request.label_column, request.id_column, request.ground_truth_column)
    if request.label_column and request.label_column in (request.columns or ()):
        raise InvalidInput(
            f"label_column {request.label_column!r} is one of the feature columns (columns); "
            "the expert's labels are not a feature: leave it out of columns"
        )
    named = [c for c in (request.id_column, request.ground_truth_column, request.label_column) if c]
    try:
        table = inspect_table(
            allowed.protocol, allowed.path, allowed.options, request.format, request.columns
        )
        if named:
            if table.format not in NAMED_COLUMNS:
                raise InvalidInput(
                    "id_column, ground_truth_column and label_column name Parquet or CSV "
                    "columns (or an AnnData file's obs columns); an NPY or Zarr array has none"
                )
            if table.format == "csv" and request.columns is None:  # counted once, not twice
                kept = tuple(c for c in table.columns if c not in named)
                if not kept:
                    raise SourceError(f"{allowed.url} has no numeric columns but those named")
                table = replace(table, columns=kept)
            if table.format == "parquet" and request.columns is None:  # all numeric but those
                features = [c for c in table.columns if c not in named]
                table = inspect_table(
                    allowed.protocol, allowed.path, allowed.options, table.format, features
                )
            for column in named:
                try:
                    table.strings(column, 0, min(1, table.n_rows))  # it exists
                except SourceError as exc:
                    if column != request.label_column:
                        raise
                    raise SourceError(f"label_column {column!r}: {exc}") from None
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None
    if table.n_rows == 0:
        raise InvalidInput(f"{allowed.url} holds no rows: there is nothing to cluster")
    dataset = Dataset(
        project_id=project.id,
        name=name,
        kind="table",
        n_items=table.n_rows,
        n_features=len(table.columns),
        feature_names=list(table.columns),
        dtype=table.dtype,
        id_column=request.id_column,
        ground_truth_column=request.ground_truth_column,
        source_filename=allowed.url,
        meta={
            "ignored_columns": [],
            "source": source_record(allowed, table),
            **({"label_column": request.label_column} if request.label_column else {}),
        },
        created_by_id=user.id if user else None,
    )
    queue_source_read(dataset, user.id if user else None)
    session.add(dataset)
    session.flush()
    return dataset


def require_unchanged(session: Session, dataset: Dataset) -> None:
    """Refuse (409) to read a dataset whose source changed since it was imported (or is no
    longer allowed), naming what changed; nothing for a dataset in the store."""
    try:
        table = referenced_table(session, dataset)
        changed = changed_objects(table) if table is not None else []
    except SourceRefused as exc:
        raise Conflict(f"dataset {dataset.id}'s source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise Conflict(f"dataset {dataset.id}'s source cannot be read: {exc}") from None
    if changed:
        more = f" and {len(changed) - 1:,} more" if len(changed) > 1 else ""
        raise Conflict(
            f"dataset {dataset.id}'s source changed since it was read: {changed[0]}{more} "
            f"is not what was read; sync it (POST /api/v1/datasets/{dataset.id}/sync) to read "
            "it as it is now"
        )
