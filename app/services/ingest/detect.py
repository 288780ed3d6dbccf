"""Decide how to read an upload from its first bytes, its name and its declared type."""

from pathlib import PurePath

from app.engine.image.image_file import file_format
from app.services.ingest.h5ad_table import HDF5_MAGIC
from app.services.ingest.npy_array import NPY_MAGIC
from app.services.ingest.parquet_table import PARQUET_MAGIC

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff"}


def detect_format(head: bytes, filename: str, content_type: str | None) -> str:
    """One of `image`, `h5ad`, `npy`, `parquet`, `csv`, or `bad_image` (claims to be an image
    but is not)."""
    suffix = PurePath(filename or "").suffix.lower()
    if file_format(head) is not None:
        return "image"
    if head.startswith(HDF5_MAGIC) or suffix == ".h5ad":
        return "h5ad"
    if head.startswith(NPY_MAGIC) or suffix == ".npy":
        return "npy"
    if head.startswith(PARQUET_MAGIC) or suffix == ".parquet":
        return "parquet"
    if suffix in IMAGE_SUFFIXES or (content_type or "").startswith("image/"):
        return "bad_image"
    return "csv"
