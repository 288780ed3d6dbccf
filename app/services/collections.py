"""Collections: images uploaded together (several files, or the planes of a TIFF stack), one
image dataset each, named after their file and place, sharing `meta.collection`. A fitted run
then segments them all at once (`POST /runs/{id}/apply` with `dataset_ids`)."""

import uuid
from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.engine.image.image_file import ImageHeader
from app.services.errors import InvalidInput, PayloadTooLarge
from app.services.image_rows import image_dataset_row
from app.services.ingest.image_file import (
    check_collection_file,
    check_decoded_budget,
    whole_limit,
)
from app.services.ingest.short_transactions import import_in_short_transactions
from app.services.ingest.upload import UploadedFile, UploadLimits, valid_name
from app.services.job_limits import check_active_jobs
from app.store import staged_files
from app.store.stored import StoredInfo

MAX_COLLECTION_IMAGES = 1000


def create_collection(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    files: list[UploadedFile],
    limits: UploadLimits,
) -> list[Dataset]:
    """Every file is checked before anything is stored: from its headers, and where they cannot
    vouch for the pixels (floats, PNG, JPEG) by decoding its images one at a time. The files
    are then kept as they came (staged), outside any write transaction, and the answer comes
    at once: each image is taken from its file by its featurization, in the background
    (`app/jobs/featurize/collection_images.py`), so a 1,000-plane stack is not decoded and
    stored while its user waits. One bad file or plane: a 4xx naming it, and nothing stored.
    The featurizations are queued (the caller submits them after committing); together they
    count as one job toward the user's limit until the last has finished."""
    collection = valid_name(name)
    if not files:
        raise InvalidInput("a collection needs at least one image file")
    total = sum(f.size for f in files)
    if total > limits.max_bytes:
        raise PayloadTooLarge(
            f"the files have {total:,} bytes; the limit is {limits.max_bytes:,} bytes"
        )
    check_active_jobs(session, user, limits.max_active_jobs, lock=False)  # before reading
    limit, setting = whole_limit(limits.max_image_pixels, limits.whole_image_pixels)
    for file in files:
        if file.size == 0:
            raise InvalidInput(f"{file.filename!r} is empty")
    checked = [check_collection_file(f.stream, f.filename, limit, setting) for f in files]
    check_decoded_budget(checked)  # before decoding
    n_images = sum(len(file.contents) for file in checked)
    if n_images > MAX_COLLECTION_IMAGES:
        raise InvalidInput(
            f"the files hold {n_images:,} images, more than {MAX_COLLECTION_IMAGES:,}; upload "
            "them as several collections"
        )
    for checked_file in checked:
        checked_file.check_pixels()
    batch = uuid.uuid4().hex
    names = [staged_files.new_name() for _ in checked]  # each file's, once staged
    every = [
        image_dataset_row(
            project=project,
            user=user,
            name=valid_name(_image_name(file.filename, place)),
            source_filename=file.filename,
            image=_from_header(header),
            collection=collection,
            batch=batch,
            source={"file": staged, "image": index},
        )
        for file, staged in zip(checked, names, strict=True)
        for index, (place, header) in enumerate(file.contents)
    ]
    stored: list[StoredInfo] = []

    def work() -> None:
        for file, staged in zip(checked, names, strict=True):
            stored.append(staged_files.stage(session, staged, file.data))

    def finish() -> None:
        for info in stored:
            staged_files.record(session, info)
        check_active_jobs(session, user, limits.max_active_jobs)

    import_in_short_transactions(session, every, work, finish=finish)
    return every


def _from_header(header: ImageHeader) -> dict[str, Any]:
    """An image's meta.image as its header gives it, until the image is taken from its file
    (then ``bytes`` is the size of the file it is kept as)."""
    return {
        "format": header.format,
        "width": header.width,
        "height": header.height,
        "mode": header.mode,
        "dtype": header.dtype,
        "channels": list(header.channel_names),
        "bytes": 0,
    }


def _image_name(filename: str, place: str) -> str:
    """``cells.tif`` for a file of one image, ``cells.tif · Z 3`` for a plane of a stack."""
    base = filename or "image"
    return (f"{base} · {place}" if place else base)[:200]
