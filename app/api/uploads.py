"""Helpers for multipart uploads shared by the API and the pages."""

from dataclasses import dataclass

from fastapi import UploadFile
from sqlalchemy.orm import Session

from app.api.deps import ProjectAccess
from app.config import Settings
from app.db.models import Dataset
from app.services import collections, datasets
from app.services.ingest.table_readers import TableColumns
from app.services.ingest.upload import UploadedFile, UploadLimits


def upload_size(file: UploadFile) -> int:
    """Bytes in the spooled upload (Starlette knows it; measure when it does not)."""
    if file.size is not None:
        return file.size
    file.file.seek(0, 2)
    size = file.file.tell()
    file.file.seek(0)
    return size


@dataclass(frozen=True)
class UploadForm:
    """The text fields of an upload, as the form and the API both take them."""

    name: str | None
    id_column: str | None
    ground_truth_column: str | None
    label_column: str | None = None


def import_uploaded_file(
    session: Session,
    settings: Settings,
    access: ProjectAccess,
    file: UploadFile,
    form: UploadForm,
    ground_truth: UploadFile | None = None,
) -> Dataset:
    """A multipart upload (the form's or the API's) through the dataset import use case."""
    return datasets.import_upload(
        session=session,
        project=access.project,
        user=access.user,
        name=form.name or file.filename or "",
        upload=_uploaded(file),
        limits=UploadLimits.from_settings(settings),
        columns=TableColumns(
            form.id_column or None, form.ground_truth_column or None, form.label_column or None
        ),
        ground_truth_image=ground_truth.file.read() if ground_truth is not None else None,
    )


def import_collection(
    session: Session,
    settings: Settings,
    access: ProjectAccess,
    files: list[UploadFile],
    name: str,
) -> list[Dataset]:
    """Several image files (the form's or the API's) through the collection use case."""
    return collections.create_collection(
        session=session,
        project=access.project,
        user=access.user,
        name=name,
        files=[_uploaded(f) for f in files],
        limits=UploadLimits.from_settings(settings),
    )


def _uploaded(file: UploadFile) -> UploadedFile:
    return UploadedFile(file.file, file.filename or "", upload_size(file), file.content_type)
