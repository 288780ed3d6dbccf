"""Several images uploaded as one collection (files, or the planes of a TIFF stack)."""

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile, status
from pydantic import BaseModel

from app.api.deps import EditorAccess, SessionDep, SettingsDep
from app.api.job_signals import featurizations_queued
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED, Id
from app.api.schemas.datasets import DatasetRead
from app.api.uploads import import_collection

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
