"""A Zarr array read in place: a 2-D float array (v2 or v3), read by row range through zarr's
own fsspec store, so only the chunks a range overlaps are fetched.

Its version is a hash of its metadata document (an array's directory has no one ETag): a
rewritten array with another shape or chunking is seen as changed. Zarr is imported on use."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from app.store.sources.filesystems import changed, path_of, reading
from app.store.sources.source_types import Layout, SourceError, SourceFile
from app.store.sources.values import float_dtype

ZARR_METADATA = ("zarr.json", ".zarray")


def zarr_array(url: str, options: dict[str, Any]) -> Any:
    import zarr
    import zarr.storage

    # An asynchronous filesystem on zarr's own event loop (a synchronous one, "file", is
    # wrapped), as `FsspecStore.from_url` makes it: see `app/store/array_store._connect`.
    # Options are for remote stores: the local filesystem is the plain one (as
    # `filesystems.filesystem`).
    storage = {} if url.startswith("file://") else dict(options)
    store = zarr.storage.FsspecStore.from_url(url, storage_options=storage, read_only=True)
    return zarr.open_array(store=store, mode="r")


def zarr_version(fs: Any, path: str) -> str | None:
    """A hash of the array's metadata document (None when there is none)."""
    for name in ZARR_METADATA:
        document = f"{path.rstrip('/')}/{name}"
        fs.invalidate_cache(document)
        try:
            data = fs.cat_file(document)
        except FileNotFoundError:
            continue
        return hashlib.blake2b(bytes(data), digest_size=16).hexdigest()
    return None


def inspect_zarr(fs: Any, path: str, url: str, options: dict[str, Any]) -> Layout:
    with reading(url, options, "read as a Zarr array"):
        version = zarr_version(fs, path)
        if version is None:
            raise SourceError(f"{url} is not a Zarr array (no zarr.json or .zarray)")
        array = zarr_array(url, options)
        dtype = np.dtype(array.dtype)
        if len(array.shape) != 2:
            raise SourceError(
                f"{url}: a Zarr array of {len(array.shape)} dimensions; a table is 2-D "
                "(rows x columns)"
            )
        if dtype.kind != "f":
            raise SourceError(f"{url}: a Zarr array of {dtype}; a table read in place is float")
    rows, d = (int(s) for s in array.shape)
    return Layout(
        files=(SourceFile(url, rows, 0, version),),
        columns=tuple(f"x{j}" for j in range(d)),
        dtype=float_dtype(dtype),
    )


def zarr_chunk_rows(file: SourceFile, options: dict[str, Any]) -> int:
    """The rows in one of the array's chunks."""
    with reading(file.url, options):
        array = zarr_array(file.url, options)
        return max(1, int(array.chunks[0]))


def read_zarr(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    d: int,
    a: int,
    b: int,
    out: np.ndarray,
) -> None:
    with reading(file.url, options):
        if zarr_version(fs, path_of(file.url, protocol)) != file.version:
            raise changed(file.url)
        array = zarr_array(file.url, options)
        if tuple(array.shape) != (file.rows, d):
            raise changed(file.url)
        out[...] = np.asarray(array[a:b])
