"""Image uploads: a picture decoded whole (PNG, JPEG, TIFF up to the whole-picture limit) is
stored with its Deep Zoom pyramid and queued for featurization; a larger TIFF is a slide
(`slides.py`), read in bands. Pixels (or superpixels) become items when the featurization ends.
"""

import numpy as np
from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.engine.image.image_file import TIFF_MAGICS
from app.engine.image.masks import decode_index_png
from app.services import deep_zoom
from app.services.errors import InvalidInput
from app.services.image_rows import image_dataset_row
from app.services.ingest.image_file import parse_image, whole_limit
from app.services.ingest.parsed import ParsedImage
from app.services.ingest.short_transactions import import_in_short_transactions
from app.services.ingest.upload import UploadedFile, UploadLimits, valid_name
from app.services.job_limits import check_active_jobs
from app.services.slides import create_slide_dataset, slide_header
from app.store import chunks
from app.store.dataset_arrays import DISPLAY_IMAGE, IMAGE, PIXEL_GROUND_TRUTH


def import_image(
    *,
    session: Session,
    project: Project,
    user: User,
    name: str,
    upload: UploadedFile,
    limits: UploadLimits,
    head: bytes,
    ground_truth_image: bytes | None = None,
) -> Dataset:
    """An image upload; `ground_truth_image` is a PNG index image of the same size (pixel value
    = class; 255 = unknown). Its featurization counts toward the user's `max_active_jobs` (429
    beyond, nothing stored)."""
    # A refusal before the file is read; the count that holds is taken again, under lock, in
    # the short transaction that queues the featurization.
    check_active_jobs(session, user, limits.max_active_jobs, lock=False)
    if head.startswith(TIFF_MAGICS) and _is_slide(upload, limits):
        if ground_truth_image is not None:
            raise InvalidInput(
                "a ground_truth image is taken for images decoded whole (up to "
                f"{limits.whole_image_pixels:,} pixels, IMAGE_WHOLE_PIXELS), not for slides"
            )
        return create_slide_dataset(
            session=session, project=project, user=user, name=name, stream=upload.stream,
            filename=upload.filename, size=upload.size, max_pixels=limits.max_image_pixels,
            before_insert=lambda: check_active_jobs(session, user, limits.max_active_jobs),
        )  # fmt: skip
    image = parse_image(
        upload.stream,
        upload.filename,
        *whole_limit(limits.max_image_pixels, limits.whole_image_pixels),
    )
    truth, classes = _ground_truth(ground_truth_image, image)
    dataset = image_row(
        project=project, user=user, name=name, image=image, source_filename=upload.filename,
        ground_truth_classes=classes,
    )  # fmt: skip
    import_in_short_transactions(
        session,
        [dataset],
        lambda: store_image(session, dataset, image, truth, limits.chunk_rows),
        finish=lambda: check_active_jobs(session, user, limits.max_active_jobs),
    )
    return dataset


def _is_slide(upload: UploadedFile, limits: UploadLimits) -> bool:
    header = slide_header(upload.stream, upload.filename, upload.size, limits.max_image_pixels)
    return header.width * header.height > limits.whole_image_pixels


def create_image_dataset(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    image: ParsedImage,
    source_filename: str,
    chunk_rows: int = 65_536,
) -> Dataset:
    """An image held in memory (the demo data) as a dataset, its featurization queued with
    the default recipe (the caller submits it after committing)."""
    dataset = image_row(
        project=project, user=user, name=name, image=image, source_filename=source_filename
    )
    import_in_short_transactions(
        session, [dataset], lambda: store_image(session, dataset, image, None, chunk_rows)
    )
    return dataset


def image_row(
    *,
    project: Project,
    user: User | None,
    name: str,
    image: ParsedImage,
    source_filename: str,
    ground_truth_classes: list[str] | None = None,
    collection: str | None = None,
    batch: str | None = None,
) -> Dataset:
    """The (unsaved) row of a decoded image; `collection`: the name of the images uploaded
    with it (`meta.collection`), whose featurizations are one `batch`."""
    return image_dataset_row(
        project=project,
        user=user,
        name=valid_name(name),
        source_filename=source_filename,
        image=image.meta(),
        ground_truth_classes=ground_truth_classes,
        collection=collection,
        batch=batch,
    )


def store_image(
    session: Session,
    dataset: Dataset,
    image: ParsedImage,
    truth: np.ndarray | None,
    chunk_rows: int,
    pyramid: bool = True,
) -> None:
    """A decoded image's arrays: its file, its display copy, its Deep Zoom pyramid (unless
    ``pyramid`` is False: then it is built when the image is first viewed) and the pixels'
    ground truth."""
    chunks.write_blob(session=session, dataset_id=dataset.id, kind=IMAGE, data=image.data)
    if image.display is not None:
        chunks.write_blob(
            session=session, dataset_id=dataset.id, kind=DISPLAY_IMAGE, data=image.display
        )
    if pyramid:
        deep_zoom.add_picture_pyramid(session=session, dataset=dataset, shown=image.shown)
    if truth is not None:
        chunks.write_array(
            session=session,
            dataset_id=dataset.id,
            kind=PIXEL_GROUND_TRUTH,
            array=truth.ravel(),
            chunk_rows=chunk_rows,
        )


def _ground_truth(
    data: bytes | None, image: ParsedImage
) -> tuple[np.ndarray | None, list[str] | None]:
    if data is None:
        return None, None
    return _pixel_classes(data, (image.height, image.width))


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
