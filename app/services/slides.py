"""Whole slides: TIFF images too large to decode at once (above `IMAGE_WHOLE_PIXELS`), taken in
bands of rows (DESIGN.md Sec. 9 and 12).

At upload, in the caller's transaction: the file is checked without decoding it (one image,
every strip or tile inside the file), then read band by band into a tiled array of its pixels
in the array store (`SLIDE_PIXELS`, the file's own dtype), which featurization reads block by
block; the percentile sample and each channel's extremes are taken on the way. A second pass
over the stored pixels writes the Deep Zoom pyramid a viewer reads (a photo's picture, or the
measured channels below the full level, drawn with each viewer's display). The file itself is
kept, streamed. All of it is written before the dataset's row is inserted (`chunks.Staging`),
so the minutes a large slide takes hold no database lock. Memory follows a band, not the slide:
a refused file (damaged half-way, NaN at row 9,000) rolls back with nothing stored.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, User
from app.engine.image.channels import robust_range, sample_step
from app.engine.image.deep_zoom import halve_picture
from app.engine.image.display import halve_channels
from app.engine.image.image_file import ImageFileError, ImageHeader
from app.engine.image.tiff_bands import open_bands
from app.services.errors import InvalidInput
from app.services.image_rows import image_dataset_row
from app.services.ingest.image_file import check_size
from app.store import chunks, pyramids
from app.store.dataset_arrays import IMAGE, SLIDE_PIXELS

SLIDE_TILE = 1024  # the stored pixels' chunks: a featurization block's window reads a few


@dataclass
class _Sample:
    """Each channel's percentile sample (the pixels ``Multichannel.ranges`` would take of the
    whole image: every ``step``-th in raster order) and extremes, gathered band by band."""

    width: int
    step: int
    values: list[list[NDArray[np.generic]]] = field(default_factory=list)
    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None

    def add(self, start_row: int, band: NDArray[np.generic]) -> None:
        flat = band.reshape(-1, band.shape[2])
        first = start_row * self.width
        offset = -first % self.step  # the band's first sampled pixel
        if not self.values:
            self.values = [[] for _ in range(flat.shape[1])]
        for channel, values in enumerate(self.values):
            values.append(flat[offset :: self.step, channel].copy())
        low, high = flat.min(axis=0).astype(np.float64), flat.max(axis=0).astype(np.float64)
        self.low = low if self.low is None else np.minimum(self.low, low)
        self.high = high if self.high is None else np.maximum(self.high, high)

    def ranges(self) -> NDArray[np.float64]:
        assert self.low is not None and self.high is not None
        return np.stack(
            [
                robust_range(np.concatenate(values), float(lo), float(hi))
                for values, lo, hi in zip(self.values, self.low, self.high, strict=True)
            ]
        )


def _within(max_pixels: int) -> Callable[[ImageHeader], None]:
    """The size check of a slide's header (read in bands: no decoded-bytes limit)."""
    return lambda header: check_size(header.width, header.height, None, max_pixels)


def slide_header(stream: BinaryIO, filename: str, size: int, max_pixels: int) -> ImageHeader:
    """What the slide declares, checked (4xx on a damaged, unsupported or too large file)."""
    try:
        with open_bands(stream, size, _within(max_pixels)) as tiff:
            return tiff.header
    except ImageFileError as exc:
        raise InvalidInput(f"{filename!r}: {exc}") from None


def create_slide_dataset(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    stream: BinaryIO,
    filename: str,
    size: int,
    max_pixels: int,
    before_insert: Callable[[], None] = lambda: None,
) -> Dataset:
    """Store a slide and queue its featurization (the caller submits it after committing).
    Its arrays are written first (`chunks.Staging`), its row inserted last, after
    ``before_insert`` (the job-limit check, which locks): minutes of writing hold no database
    lock."""
    staging = chunks.Staging(session)
    try:
        with open_bands(stream, size, _within(max_pixels)) as tiff:
            header = tiff.header
            with staging.tiled_writer(
                SLIDE_PIXELS,
                shape=(header.height, header.width, header.channels),
                dtype=header.dtype,
                tile=SLIDE_TILE,
            ) as pixels:
                sample = _Sample(header.width, sample_step(header.width * header.height))
                for start, band in tiff.bands(SLIDE_TILE):
                    pixels.write(start, 0, band)
                    sample.add(start, band)
    except ImageFileError as exc:
        raise InvalidInput(f"{filename!r}: {exc}") from None
    assert sample.low is not None and sample.high is not None  # a slide has rows
    image = _image_meta(header, size)
    image["extremes"] = np.stack([sample.low, sample.high], axis=1).tolist()
    ranges = None if header.photo else sample.ranges()
    if ranges is not None:
        image["ranges"] = ranges.tolist()
    stream.seek(0)
    staging.write_blob_stream(IMAGE, stream)
    _write_picture_pyramid(session, staging, pixels.read, header, ranges is not None)
    before_insert()
    dataset = image_dataset_row(
        project=project, user=user, name=name, source_filename=filename, image=image
    )
    session.add(dataset)
    session.flush()
    staging.record(dataset.id)
    return dataset


def _image_meta(header: ImageHeader, size: int) -> dict[str, object]:
    return {
        "format": header.format,
        "width": header.width,
        "height": header.height,
        "mode": header.mode,
        "dtype": header.dtype,
        "channels": list(header.channel_names),
        "bytes": size,
        "tiled": True,
        "photo": header.photo,
    }


def _write_picture_pyramid(
    session: Session,
    staging: chunks.Staging,
    pixels: Callable[[int, int], NDArray[Any]],
    header: ImageHeader,
    measured: bool,
) -> None:
    """The Deep Zoom pyramid a viewer reads, from the stored pixels (``pixels(start, stop)``:
    whole rows): of a photo, its picture; of measured channels, the channels themselves below
    the full level (which is the stored pixels), so that each tile is drawn with the display
    its viewer asks for (``channel_tiles.py``), the default one included."""
    if measured:
        pyramids.write_levels_in_bands(
            session=session,
            width=header.width,
            height=header.height,
            full=pixels,
            halve=halve_channels,
            layer=pyramids.CHANNELS,
            full_stored=True,
            staging=staging,
        )
        return

    def shown(start: int, stop: int) -> NDArray[np.integer]:
        band = pixels(start, stop)
        return band[:, :, 0] if band.shape[2] == 1 else band

    pyramids.write_levels_in_bands(
        session=session,
        width=header.width,
        height=header.height,
        full=shown,
        halve=halve_picture,
        staging=staging,
    )
