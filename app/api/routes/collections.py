"""Several images uploaded as one collection (files, or the planes of a TIFF stack)."""

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile, status
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import EditorAccess, SessionDep, SettingsDep
from app.api.job_signals import featurizations_queued, runs_changed
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED, Id
from app.api.schemas.datasets import DatasetRead
from app.api.uploads import import_collection
from app.services import collection_imports
from app.services.ingest.upload import UploadLimits

MAX_COLLECTION_FILES = 1000

router = APIRouter(tags=["datasets"], responses=ERROR_RESPONSES)


class CollectionRead(BaseModel):
    """The image datasets a collection upload made, in the order of the files and planes."""

    name: str
    items: list[DatasetRead]


@router.post(
    "/projects/{project_id}/collections",
    response_model=CollectionRead,
    status_code=status.HTTP_201_CREATED,
    responses=RATE_LIMITED,
)
def create_collection(
    project_id: Id,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    files: Annotated[
        list[UploadFile],
        File(
            min_length=1,
            max_length=MAX_COLLECTION_FILES,
            description="PNG, JPEG or TIFF images; a TIFF stack (Z, T or pages) or a file "
            "of several images gives one image per plane",
        ),
    ],
    name: Annotated[str, Form(min_length=1, max_length=200, description="The collection's name")],
) -> CollectionRead:
    """Upload several images at once: one image dataset per image (named after its file, and
    its plane for a stack: `cells.tif · Z 3`), each with `meta.collection` = `name`, each
    featurized in the background. Every file is checked before anything is stored. Segment
    them all with a fitted run: `POST /runs/{id}/apply` with `dataset_ids`."""
    made = import_collection(session, settings, access, files, name)
    session.commit()
    featurizations_queued(request.app.state, made)
    return CollectionRead(name=name, items=[DatasetRead.model_validate(d) for d in made])


class CollectionImport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The collection's name")
    url: str = Field(
        min_length=1,
        max_length=2000,
        description="A prefix under one the operator opened (IMPORT_SOURCES) holding TIFF files "
        "and OME-Zarr images (searched four folders deep; an OME-Zarr image is not searched "
        "inside)",
    )
    write_labels: bool = Field(
        False, description="OME-Zarr images: allow runs' masks to be written beside them"
    )


@router.post(
    "/projects/{project_id}/collections/import",
    response_model=CollectionRead,
    status_code=status.HTTP_201_CREATED,
    responses=RATE_LIMITED,
)
def import_images(
    project_id: Id,
    body: CollectionImport,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> CollectionRead:
    """Every image under a prefix, by reference: one image dataset each (named by its path
    under the prefix), read in place and never copied, each featurized in the background.
    Registered from their metadata (and a small sample each for the display): nothing is
    registered if one image cannot be. Keep it in step with the prefix:
    `POST .../collections/sync`."""
    made = collection_imports.import_collection_by_reference(
        session=session, project=access.project, user=access.user, name=body.name, url=body.url,
        limits=UploadLimits.from_settings(settings), write_labels=body.write_labels,
    )  # fmt: skip
    session.commit()
    featurizations_queued(request.app.state, made)
    return CollectionRead(name=body.name, items=[DatasetRead.model_validate(d) for d in made])


class CollectionSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The collection's name")


class KeptImage(BaseModel):
    dataset_id: int
    url: str
    annotations: int = Field(description="Live annotations on it: why it was kept")


class CollectionSyncRead(BaseModel):
    """What a sync of a collection imported by reference found and did."""

    name: str
    new: list[DatasetRead] = Field(description="Images that appeared: registered, featurizing")
    changed: list[DatasetRead] = Field(description="Images whose version changed: featurizing")
    deleted: list[str] = Field(description="Images that went: their datasets removed")
    kept: list[KeptImage] = Field(
        description="Images that went but hold annotations: kept, never dropped silently"
    )


@router.post("/projects/{project_id}/collections/sync", response_model=CollectionSyncRead)
def sync_collection(
    project_id: Id,
    body: CollectionSyncRequest,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> CollectionSyncRead:
    """List the collection's prefix again and act on the difference only: new images are
    registered, changed ones featurized again, gone ones removed unless annotated (then kept
    and reported). Unchanged images are not read."""
    done = collection_imports.sync_collection(
        session=session, project=access.project, user=access.user, name=body.name,
        limits=UploadLimits.from_settings(settings),
    )  # fmt: skip
    session.commit()
    runs_changed(request.app.state, done.stopped_runs, stop=True)
    featurizations_queued(request.app.state, [*done.new, *done.changed])
    return CollectionSyncRead(
        name=body.name,
        new=[DatasetRead.model_validate(d) for d in done.new],
        changed=[DatasetRead.model_validate(d) for d in done.changed],
        deleted=done.deleted,
        kept=[KeptImage(**k) for k in done.kept],
    )
