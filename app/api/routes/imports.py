"""Datasets imported by reference: registered from where they live, read in place."""

from typing import Annotated

from fastapi import APIRouter, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import EditorAccess, SessionDep, SettingsDep
from app.api.job_signals import featurization_queued
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.api.schemas.datasets import DatasetRead
from app.services import imports, source_sync
from app.services.ingest.upload import UploadLimits

router = APIRouter(tags=["datasets"], responses=ERROR_RESPONSES)

Column = Annotated[str, Field(min_length=1, max_length=200)]


class ImportCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The dataset's name")
    url: str = Field(
        min_length=1,
        max_length=2000,
        description="Where the table lives, under a prefix the operator opened "
        "(IMPORT_SOURCES): s3://bucket/prefix/... or file:///path/...; a Parquet file, a "
        "prefix of Parquet files (one table), an NPY file or a Zarr array",
    )
    format: imports.SourceFormat = Field(
        "auto",
        description="auto: from the name (.parquet, .npy, .tif) or what the prefix holds "
        "(an OME-Zarr image's multiscales, a Zarr array, Parquet files)",
    )
    columns: list[Column] | None = Field(
        None, max_length=100_000, description="Feature columns (Parquet); empty: every numeric one"
    )
    id_column: Column | None = Field(None, description="Parquet: the items' ids")
    ground_truth_column: Column | None = Field(None, description="Parquet: each item's class")
    label_column: Column | None = Field(
        None,
        description="Parquet (an AnnData file: an obs column): the expert's labels (empty or "
        "null: none); once the table is read they are the importing user's label annotations, "
        "one per label, as one act. Not a feature, nor the id or ground-truth column",
    )
    write_labels: bool = Field(
        False,
        description="An OME-Zarr image: allow runs' masks to be written beside it "
        "(`POST /runs/{id}/labels/write-back`); that its labels/ can be written is checked now",
    )


@router.post(
    "/projects/{project_id}/datasets/import",
    response_model=DatasetRead,
    status_code=status.HTTP_201_CREATED,
)
def import_dataset(
    project_id: Id,
    body: ImportCreate,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> DatasetRead:
    """Register a table where it already lives, by reference, from its metadata alone:
    nothing of its values is copied; item pages, runs (on this server or on Dask workers) and
    exports read it in place. The answer comes at once, with status `featurizing`: the table
    is then read once in the background for its statistics, PCA view, ids and classes, and is
    `ready` after it (or `failed`, saying which object, row and column); a `label_column`'s
    labels then become label annotations, one act, in the same transaction. Each object's
    version is recorded: a run or export that finds one changed is refused (409) naming it.
    Refused (422) before any request leaves the server: a URL outside the prefixes the
    operator opened (`IMPORT_SOURCES`; none by default)."""
    dataset = imports.import_by_reference(
        session=session,
        project=access.project,
        user=access.user,
        request=imports.ImportRequest(
            name=body.name,
            url=body.url,
            format=body.format,
            columns=body.columns,
            id_column=body.id_column,
            ground_truth_column=body.ground_truth_column,
            label_column=body.label_column,
            write_labels=body.write_labels,
        ),
        limits=UploadLimits.from_settings(settings),
    )
    session.commit()
    featurization_queued(request.app.state, dataset.id, dataset.status)
    return DatasetRead.model_validate(dataset)


class SyncRead(BaseModel):
    """What a sync found, and what its read in the background does."""

    dataset: DatasetRead = Field(
        description="The dataset: `featurizing` while the source is read again (runs and "
        "exports wait), then `ready`; its featurization's `last_sync` then says what was done, "
        "or why the read failed (the dataset is then as it was before the sync)"
    )
    new: list[str] = Field(description="Objects that appeared since the last read")
    changed: list[str] = Field(description="Objects whose version (ETag, mtime) changed")
    deleted: list[str] = Field(description="Objects that are gone")
    n_items_before: int
    n_items: int = Field(description="The source's rows now: the dataset's items once read")
    views_removed: int = Field(description="Views made from the old values, removed by the read")
    rows_read: int = Field(
        description="Rows the read takes from the source: only the added ones when the source "
        "only gained objects after those read (the rest continued), else all"
    )


@router.post(
    "/datasets/{dataset_id}/sync",
    response_model=SyncRead,
    responses={202: {"model": SyncRead, "description": "Changed: read again in the background"}},
)
def sync_dataset(
    dataset_id: Id,
    request: Request,
    response: Response,
    session: SessionDep,
    access: EditorAccess,
) -> SyncRead:
    """Bring a dataset imported by reference up to date with its source: the objects that
    are new, changed or gone are listed (200 when there are none: nothing to do). If there are
    any, the answer is 202 and the dataset is read again in the background, as after an import
    (`featurizing`, then `ready`): its statistics, PCA view, ids and classes are made again from
    the source as it is now; when the source only gained objects after those read, only their
    rows are read and the view keeps its axes. Refused (409) when rows move (an object before
    others changed its rows or went) and an annotation names an item past those that keep
    their place, or while the dataset is being read; 422 for an uploaded dataset."""
    dataset = access.require_dataset()
    report = source_sync.sync_dataset(session=session, dataset=dataset, user=access.user)
    session.commit()
    if report.reading:
        response.status_code = status.HTTP_202_ACCEPTED
        featurization_queued(request.app.state, dataset.id, dataset.status)
    return SyncRead(
        dataset=DatasetRead.model_validate(dataset),
        new=report.new,
        changed=report.changed,
        deleted=report.deleted,
        n_items_before=report.n_items_before,
        n_items=report.n_items,
        views_removed=report.views_removed,
        rows_read=report.rows_read,
    )
