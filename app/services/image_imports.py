"""An image imported by reference: an OME-Zarr image or a tiled (OME-)TIFF registered from its
metadata, read in place, never copied. It is a slide like an uploaded one (featurized block by
block in the background, shown through Deep Zoom), except that its pixels are windows read from
the source: the featurization reads level 0, the viewer's tiles come from the source's own
resolution levels (`deep_zoom.py`).

At import, only the metadata and one small sample are read: the display ranges and extremes
come from the source's smallest level (or, when it has no small one, a grid of windows of its
full level), so the request answers in about a second whatever the image's size."""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.engine.image.channels import robust_range
from app.services.errors import InvalidInput
from app.services.image_rows import image_dataset_row
from app.services.ingest.image_file import check_size
from app.services.job_limits import check_active_jobs
from app.store.sources.allowed import AllowedSource
from app.store.sources.images import SourceImage, inspect_image
from app.store.sources.label_images import check_writable
from app.store.sources.tables import SourceError

# The display sample: a level of at most this many pixels is read whole; a larger one (a
# source without a small level) gives WINDOWS x WINDOWS windows of WINDOW x WINDOW pixels.
SAMPLE_PIXELS = 4 * 1024**2
WINDOWS = 8
WINDOW = 128


def import_image_by_reference(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    allowed: AllowedSource,
    format: str,
    max_pixels: int,
    max_active_jobs: int | None,
    write_labels: bool = False,
) -> Dataset:
    """Register the image at ``allowed`` with its featurization queued (the caller commits and
    submits it); 4xx naming the object on anything its metadata shows wrong. With
    ``write_labels`` (an OME-Zarr image), runs' masks may be written beside it: that it can be
    written is checked now (`label_images.check_writable`)."""
    check_active_jobs(session, user, max_active_jobs, lock=False)
    image, record = registered_image(
        allowed.protocol, allowed.path, allowed.options, format, max_pixels, write_labels
    )
    dataset = image_dataset_row(
        project=project, user=user, name=name, source_filename=record["url"], image=image
    )
    dataset.meta = {**dataset.meta, "source": record}
    check_active_jobs(session, user, max_active_jobs)
    session.add(dataset)
    session.flush()
    return dataset


def registered_image(
    protocol: str,
    path: str,
    options: dict[str, Any],
    format: str,
    max_pixels: int,
    write_labels: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An image's ``meta.image`` and ``meta.source``, from its metadata and a small sample
    (InvalidInput naming the object when it cannot be a slide read in place)."""
    try:
        source = inspect_image(protocol, path, options, format)
        sample = _display_sample(source)
        if write_labels:
            check_writable(source)
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None
    try:
        check_size(source.width, source.height, None, max_pixels)
    except InvalidInput as exc:
        raise InvalidInput(f"{source.url}: {exc.detail}") from None
    record = {**source.record(), **({"write_labels": True} if write_labels else {})}
    return _image_meta(source, sample), record


def _display_sample(image: SourceImage) -> NDArray[Any]:
    """(n, C) pixels standing for the whole image (`SAMPLE_PIXELS`)."""
    small = min(
        range(len(image.levels)), key=lambda k: image.levels[k].height * image.levels[k].width
    )
    level = image.levels[small]
    if level.height * level.width <= SAMPLE_PIXELS:
        pixels = image.read(small, (0, level.height), (0, level.width))
        return pixels.reshape(-1, pixels.shape[2])
    windows = []
    for y in np.linspace(0, max(0, level.height - WINDOW), WINDOWS).astype(int):
        for x in np.linspace(0, max(0, level.width - WINDOW), WINDOWS).astype(int):
            window = image.read(small, (int(y), int(y) + WINDOW), (int(x), int(x) + WINDOW))
            windows.append(window.reshape(-1, window.shape[2]))
    return np.concatenate(windows)


def _image_meta(image: SourceImage, sample: NDArray[Any]) -> dict[str, Any]:
    """``meta.image`` as a slide upload writes it (`slides._image_meta`)."""
    values = sample.astype(np.float64)
    if not np.isfinite(values).all():
        raise InvalidInput(f"{image.url}: its pixels hold NaN or infinite values")
    low, high = values.min(axis=0), values.max(axis=0)
    meta: dict[str, Any] = {
        "format": "OME-Zarr" if image.format == "ome-zarr" else "TIFF",
        "width": image.width,
        "height": image.height,
        "mode": "RGB" if image.photo else f"{len(image.channels)} x {image.dtype}",
        "dtype": image.dtype,
        "channels": [] if image.photo else list(image.channels),
        "bytes": image.size,
        "tiled": True,
        "photo": image.photo,
        "extremes": np.stack([low, high], axis=1).tolist(),
        "levels": len(image.levels),
    }
    if not image.photo:
        meta["ranges"] = [
            robust_range(values[:, k], float(low[k]), float(high[k])).tolist()
            for k in range(values.shape[1])
        ]
    return meta
