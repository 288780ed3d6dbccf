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
from app.services.image_rows import insert_image_dataset
from app.services.ingest.image_file import parse_image, whole_limit
from app.services.ingest.parsed import ParsedImage
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
    if head.startswith(TIFF_MAGICS) and _is_slide(upload, limits):
        if ground_truth_image is not None:
            raise InvalidInput(
                "a ground_truth image is taken for images decoded whole (up to "
                f"{limits.whole_image_pixels:,} pixels, IMAGE_WHOLE_PIXELS), not for slides"
            )
        check_active_jobs(session, user, limits.max_active_jobs)
        return create_slide_dataset(
            session=session, project=project, user=user, name=name, stream=upload.stream,
            filename=upload.filename, size=upload.size, max_pixels=limits.max_image_pixels,
        )  # fmt: skip
    image = parse_image(
        upload.stream,
        upload.filename,
        *whole_limit(limits.max_image_pixels, limits.whole_image_pixels),
    )
    check_active_jobs(session, user, limits.max_active_jobs)
    return create_image_dataset(
        session=session,
        project=project,
        user=user,
        name=name,
        image=image,
        source_filename=upload.filename,
        ground_truth_image=ground_truth_image,
        chunk_rows=limits.chunk_rows,
    )


def _is_slide(upload: UploadedFile, limits: UploadLimits) -> bool:
    header = slide_header(upload.stream, upload.filename, upload.size)
    return header.width * header.height > limits.whole_image_pixels


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
