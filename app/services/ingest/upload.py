"""An uploaded file as the imports read it, and the limits every upload is held to (built once
from the settings, so the imports take one object, not a handful of numbers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from app.config import Settings
from app.services.errors import InvalidInput
from app.services.ingest.image_file import MAX_PIXELS


@dataclass(frozen=True)
class UploadedFile:
    stream: BinaryIO
    filename: str
    size: int
    content_type: str | None = None


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int
    chunk_rows: int
    max_active_jobs: int | None = None  # background jobs per user (None: no limit)
    max_image_pixels: int = MAX_PIXELS
    whole_image_pixels: int = MAX_PIXELS  # a larger TIFF is a slide, read in bands

    @classmethod
    def from_settings(cls, settings: Settings) -> UploadLimits:
        return cls(
            max_bytes=settings.max_upload_bytes,
            chunk_rows=settings.chunk_rows,
            max_active_jobs=settings.max_active_jobs_per_user,
            max_image_pixels=settings.image_max_pixels,
            whole_image_pixels=settings.image_whole_pixels,
        )


def valid_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise InvalidInput("dataset name must be 1 to 200 characters")
    return name
