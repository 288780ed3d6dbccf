"""Helpers for multipart uploads shared by the API and the pages."""

from fastapi import UploadFile


def upload_size(file: UploadFile) -> int:
    """Bytes in the spooled upload (Starlette knows it; measure when it does not)."""
    if file.size is not None:
        return file.size
    file.file.seek(0, 2)
    size = file.file.tell()
    file.file.seek(0)
    return size
