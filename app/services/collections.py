"""Collections: images uploaded together (several files, or the planes of a TIFF stack), one
image dataset each, named after their file and place, sharing `meta.collection`. A fitted run
then segments them all at once (`POST /runs/{id}/apply` with `dataset_ids`)."""

import uuid

from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.services.errors import InvalidInput, PayloadTooLarge
from app.services.image_uploads import image_row, store_image
from app.services.ingest.image_file import (
    check_decoded_budget,
    parse_collection_file,
    whole_limit,
)
from app.services.ingest.parsed import ParsedImage
from app.services.ingest.short_transactions import import_in_short_transactions
from app.services.ingest.upload import UploadedFile, UploadLimits, valid_name
from app.services.job_limits import check_active_jobs

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
    """Every file is read and checked before anything is stored (one bad file: a 4xx naming it,
    nothing stored); then they are stored in short write transactions (nobody waits on
    the upload). The featurizations are queued (the caller submits them after committing);
    together they count as one job toward the user's limit until the last has finished."""
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
    check_decoded_budget([(file.stream, file.filename) for file in files])  # before decoding
    images: list[tuple[str, ParsedImage, str]] = []
    for file in files:
        for place, image in parse_collection_file(file.stream, file.filename, limit, setting):
            images.append((_image_name(file.filename, place), image, file.filename))
            if len(images) > MAX_COLLECTION_IMAGES:
                raise InvalidInput(
                    f"the files hold more than {MAX_COLLECTION_IMAGES:,} images; upload them "
                    "as several collections"
                )
    batch = uuid.uuid4().hex
    made = [
        image_row(
            project=project,
            user=user,
            name=image_name,
            image=image,
            source_filename=filename,
            collection=collection,
            batch=batch,
        )
        for image_name, image, filename in images
    ]

    def work() -> None:
        for dataset, (_, image, _) in zip(made, images, strict=True):
            store_image(session, dataset, image, None, limits.chunk_rows)

    import_in_short_transactions(
        session,
        made,
        work,
        finish=lambda: check_active_jobs(session, user, limits.max_active_jobs),
    )
    return made


def _image_name(filename: str, place: str) -> str:
    """``cells.tif`` for a file of one image, ``cells.tif · Z 3`` for a plane of a stack."""
    base = filename or "image"
    return (f"{base} · {place}" if place else base)[:200]
