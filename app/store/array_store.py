"""Where arrays live: Zarr v3 arrays under a local directory (default ``DATA_DIR/arrays``) or any
fsspec URL (``s3://bucket/prefix``, a shared filesystem path), so a worker on another machine
reads the chunks it needs with nothing but the store URL and a key.

Tables are row blocks (``chunk_rows`` rows x every column), 1-D arrays the same, and bytes (an
uploaded picture, a fitted reduction) a 1-D uint8 array. A list of strings (item ids) is two
arrays: the UTF-8 bytes and the offsets of each string, so any row range reads on its own.
Nothing outside `app/store` knows this module exists; SQL keeps each array's key, shape, dtype,
chunking and content hash (`app/db/models/stored_arrays.py`)."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import zarr
import zarr.storage
from numpy.typing import NDArray

from app.store.stored import (
    BYTES_CHUNK,
    StoredInfo,
    StoreUnavailable,
    compressors_for,
    store_errors,
)
from app.store.writers import RowWriter, StringWriter, TiledWriter

__all__ = ["ArrayStore", "StoreUnavailable", "StoredInfo", "sweep_orphans"]

log = logging.getLogger(__name__)


def _is_url(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


class ArrayStore:
    """One store root; every method takes a key relative to it (``datasets/<token>/<kind>``)."""

    def __init__(self, location: str | Path, storage_options: dict[str, Any] | None = None):
        self.location = str(location)
        self._storage_options = storage_options or {}
        self._zarr_store: zarr.storage.StoreLike | None = None
        self._fs: Any = None
        self._root = ""

    # -- the backend, opened lazily: a server whose store is down still starts -------------

    def _open(self) -> tuple[Any, Any, str]:
        if self._zarr_store is None:
            # wrong scheme, missing driver, unwritable directory
            with store_errors(f"the array store {self.location!r} cannot be opened"):
                store, fs, root = _connect(self.location, self._storage_options)
            self._zarr_store, self._fs, self._root = store, fs, root
        return self._zarr_store, self._fs, self._root

    def _path(self, key: str) -> str:
        _, _, root = self._open()
        return f"{root.rstrip('/')}/{key}" if key else root

    def _forget_listings(self, prefix: str) -> str:
        """The path of ``prefix``, with what the filesystem remembers of listings on the way
        to it forgotten (s3fs keeps them forever by default): other processes, Dask workers
        and other servers, write to the store too, and a stale listing hides their arrays
        from `exists` and `ls`, so `delete` would leave them behind."""
        _, fs, _ = self._open()
        path = self._path(prefix)
        fs.invalidate_cache(path)
        return path

    def _fs_call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``fs.<method>(...)``; for an asynchronous filesystem its coroutine, awaited on zarr's
        event loop, where the store's other requests run."""
        _, fs, _ = self._open()
        if getattr(fs, "asynchronous", False):
            from zarr.core.sync import sync

            return sync(getattr(fs, f"_{method}")(*args, **kwargs))
        return getattr(fs, method)(*args, **kwargs)

    # -- writing ----------------------------------------------------------------------------

    def new_prefix(self, kind: str, owner_id: int) -> str:
        """A fresh directory for one dataset's or run's arrays (ids are never reused, but a
        random suffix also keeps a half-written upload of a crashed server from colliding)."""
        return f"{kind}/{owner_id}-{secrets.token_hex(4)}"

    def row_writer(
        self, key: str, *, n_columns: int | None, dtype: str | np.dtype, chunk_rows: int
    ) -> RowWriter:
        return RowWriter(self._create_array, key, n_columns, np.dtype(dtype), chunk_rows)

    def write(self, key: str, array: NDArray, *, chunk_rows: int) -> StoredInfo:
        """A whole 1-D or 2-D array, in row chunks (no longer than the array: zarr pads a
        partial chunk to its full length, so a 1 kB blob in a 16 MiB chunk cost 40 ms)."""
        writer = self.row_writer(
            key,
            n_columns=array.shape[1] if array.ndim == 2 else None,
            dtype=array.dtype,
            chunk_rows=max(1, min(chunk_rows, array.shape[0])),
        )
        writer.append(array, last=array.shape[0] <= chunk_rows)
        return writer.close()

    def _create_array(
        self, key: str, shape: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype
    ) -> zarr.Array:
        """A new array under ``key`` (replacing any), zeros until written; a store that
        cannot take it is ``StoreUnavailable``."""
        zarr_store, _, _ = self._open()
        with store_errors(f"writing {key!r} to the array store failed"):
            return zarr.create_array(
                store=zarr_store,
                name=key,
                shape=shape,
                chunks=chunks,
                dtype=dtype,
                compressors=compressors_for(dtype),
                fill_value=0,
                overwrite=True,
            )

    def write_tiled(self, key: str, image: NDArray, *, tile: int) -> StoredInfo:
        """A whole 2-D or 3-D array (an image's rows, columns and channels) in ``tile`` x
        ``tile`` chunks, so a region reads only the chunks under it (`read_region`)."""
        image = np.ascontiguousarray(image)
        chunks = (tile, tile, *image.shape[2:])
        array = self._create_array(key, image.shape, chunks, image.dtype)
        with store_errors(f"writing {key!r} to the array store failed"):
            array[...] = image
        return StoredInfo(
            key=key,
            shape=tuple(int(s) for s in image.shape),
            dtype=image.dtype.name,
            chunk_rows=tile,
            content_hash=hashlib.blake2b(image.data.cast("B"), digest_size=16).hexdigest(),
            nbytes=int(image.nbytes),
        )

    def write_dask(self, key: str, array: Any) -> StoredInfo:
        """A 1-D dask array, each task writing the rows it computes (stored chunks are the
        dask chunks, so no two tasks write one chunk) on the scheduler ``dask.compute`` uses
        here; the hash is read back a chunk at a time. The array never passes through this
        process whole: a data-parallel run's labels are written by the workers that made
        them."""
        step = int(array.chunks[0][0]) if array.shape[0] else 1
        if any(int(rows) != step for rows in array.chunks[0][:-1]) or array.chunks[0][-1] > step:
            array = array.rechunk((step,))
        dtype = np.dtype(array.dtype)
        target = self._create_array(key, tuple(int(s) for s in array.shape), (step,), dtype)
        with store_errors(f"writing {key!r} to the array store failed"):
            array.store(target, lock=False, compute=True)
        digest = hashlib.blake2b(digest_size=16)
        for block in self.iter_blocks(key):
            digest.update(np.ascontiguousarray(block).data.cast("B"))
        return StoredInfo(
            key=key,
            shape=tuple(int(s) for s in array.shape),
            dtype=dtype.name,
            chunk_rows=step,
            content_hash=digest.hexdigest(),
            nbytes=int(array.shape[0]) * dtype.itemsize,
        )

    def tiled_writer(
        self, key: str, *, shape: tuple[int, ...], dtype: str | np.dtype, tile: int
    ) -> TiledWriter:
        return TiledWriter(self._create_array, key, shape, np.dtype(dtype), tile)

    def write_bytes(self, key: str, data: bytes) -> StoredInfo:
        return self.write(key, np.frombuffer(data, dtype=np.uint8), chunk_rows=BYTES_CHUNK)

    def string_writer(self, key: str, *, chunk_rows: int) -> StringWriter:
        return StringWriter(
            key,
            chunk_rows,
            offsets=self.row_writer(
                f"{key}/offsets", n_columns=None, dtype="int64", chunk_rows=chunk_rows
            ),
            data=self.row_writer(
                f"{key}/bytes", n_columns=None, dtype="uint8", chunk_rows=BYTES_CHUNK
            ),
        )

    def write_strings(self, key: str, values: Iterable[str], *, chunk_rows: int) -> StoredInfo:
        """Strings as UTF-8 bytes plus offsets (``key/offsets`` has n + 1 entries)."""
        writer = self.string_writer(key, chunk_rows=chunk_rows)
        batch: list[str] = []
        for value in values:
            batch.append(value)
            if len(batch) >= chunk_rows:
                writer.append(batch)
                batch = []
        writer.append(batch)
        return writer.close()

    # -- reading ----------------------------------------------------------------------------

    def _array(self, key: str) -> zarr.Array:
        store, _, _ = self._open()
        try:
            return zarr.open_array(store=store, path=key, mode="r")
        except FileNotFoundError:
            raise
        except Exception as exc:
            if "not found" in str(exc).lower() or isinstance(exc, KeyError):
                raise FileNotFoundError(f"no array {key!r} in the store") from exc
            raise StoreUnavailable(f"reading {key!r} from the array store failed: {exc}") from exc

    def read(self, key: str, start: int = 0, stop: int | None = None) -> NDArray:
        """Rows [start, stop): only the chunks that overlap them are read."""
        array = self._array(key)
        return np.asarray(array[start:stop])

    def read_region(self, key: str, rows: tuple[int, int], columns: tuple[int, int]) -> NDArray:
        """Rows [rows) x columns [columns) of a 2-D or 3-D array (all channels)."""
        array = self._array(key)
        return np.asarray(array[rows[0] : rows[1], columns[0] : columns[1]])

    def dask_array(self, key: str, rows_per_task: int) -> Any:
        """The array as a lazy ``dask.array.Array`` whose tasks read their rows from the store
        themselves (Dask workers that share the store's location), ``rows_per_task`` rows
        (rounded to whole stored chunks) per task."""
        import dask.array as da

        array = self._array(key)
        step = array.chunks[0]
        rows = max(step, rows_per_task - rows_per_task % step)
        chunks = (rows, *array.shape[1:])
        return da.from_zarr(array, chunks=chunks)

    def iter_blocks(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[NDArray]:
        """Rows [start, stop) one stored chunk at a time: memory of one chunk, not the array."""
        array = self._array(key)
        rows = array.shape[0] if stop is None else min(stop, array.shape[0])
        step = array.chunks[0]
        first = start - start % step
        for lo in range(first, rows, step):
            if max(lo, start) < min(lo + step, rows):  # no empty block when start >= stop
                yield np.asarray(array[max(lo, start) : min(lo + step, rows)])

    def read_bytes(self, key: str) -> bytes:
        return self.read(key).tobytes()

    def read_strings(self, key: str, start: int = 0, stop: int | None = None) -> list[str]:
        offsets = self.read(f"{key}/offsets", start, None if stop is None else stop + 1)
        if offsets.size < 2:
            return []
        data = self.read(f"{key}/bytes", int(offsets[0]), int(offsets[-1])).tobytes()
        ends = (offsets - offsets[0]).tolist()
        return [data[a:b].decode() for a, b in pairwise(ends)]

    def shape(self, key: str) -> tuple[int, ...]:
        return tuple(self._array(key).shape)

    # -- deleting and listing ---------------------------------------------------------------

    def delete(self, prefix: str) -> None:
        """Everything under ``prefix`` (a dataset's or run's directory); no error if absent."""
        path = self._forget_listings(prefix)
        with (
            suppress(FileNotFoundError),
            store_errors(f"deleting {prefix!r} from the array store failed", absent_passes=True),
        ):
            if self._fs_call("exists", path):
                self._fs_call("rm", path, recursive=True)

    def children(self, prefix: str) -> dict[str, float]:
        """Names directly under ``prefix``, each with its modification time (epoch seconds; 0
        when the backend does not say, e.g. an S3 'directory')."""
        path = self._forget_listings(prefix)
        entries = self._listing("ls", prefix, path) or []
        found: dict[str, float] = {}
        for entry in entries:
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if name == "zarr.json":  # the group's own metadata, not a child
                continue
            found[name] = _modified(entry)
        return found

    def last_modified(self, prefix: str) -> float:
        """The newest modification time of anything under ``prefix`` (0 if nothing says): the
        age of an S3 'directory', which has no time of its own."""
        path = self._forget_listings(prefix)
        entries = self._listing("find", prefix, path) or {}
        return max((_modified(entry) for entry in entries.values()), default=0.0)

    def _listing(self, method: str, prefix: str, path: str) -> Any:
        """``fs.<method>(path, detail=True)``; None when nothing is there."""
        with (
            suppress(FileNotFoundError),
            store_errors(f"listing {prefix!r} in the array store failed", absent_passes=True),
        ):
            return self._fs_call(method, path, detail=True)
        return None

    def check(self) -> None:
        """Write, read back and delete a probe; StoreUnavailable saying why if any step fails."""
        key = f"health/{secrets.token_hex(6)}"
        with store_errors(f"the array store {self.location!r} is not usable"):
            self.write(key, np.arange(3, dtype=np.int64), chunk_rows=3)
            if not np.array_equal(self.read(key), np.arange(3)):
                raise StoreUnavailable("the array store returned other bytes than were written")
            self.delete(key)


def _connect(location: str, storage_options: dict[str, Any]) -> tuple[Any, Any, str]:
    """The Zarr store, the filesystem and the root path of ``location``."""
    if _is_url(location):
        import fsspec
        from fsspec.utils import get_protocol

        options = dict(storage_options)
        if fsspec.get_filesystem_class(get_protocol(location)).async_impl:
            # zarr awaits the filesystem's coroutines on its own event loop, so
            # it must be an asynchronous instance (as zarr's `from_url` makes it);
            # a synchronous one (s3fs by default) would run our own calls on
            # fsspec's loop and share an HTTP session across both ("attached to
            # a different loop"). `_fs_call` runs ours on zarr's loop too.
            options.setdefault("asynchronous", True)
        fs, root = fsspec.core.url_to_fs(location, **options)
        store: Any = zarr.storage.FsspecStore(
            fs=fs if fs.async_impl else _async_wrapper(fs), path=root
        )
    else:
        from fsspec.implementations.local import LocalFileSystem

        root = str(Path(location.removeprefix("file://")).resolve())
        Path(root).mkdir(parents=True, exist_ok=True)
        fs = LocalFileSystem()
        store = zarr.storage.LocalStore(root)
    return store, fs, root


def _modified(entry: dict[str, Any]) -> float:
    """An fsspec listing entry's modification time in epoch seconds (0 when it has none)."""
    modified = entry.get("mtime") or entry.get("LastModified") or 0
    return modified.timestamp() if hasattr(modified, "timestamp") else float(modified)


def _async_wrapper(fs: Any) -> Any:
    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

    return AsyncFileSystemWrapper(fs)


def sweep_orphans(store: ArrayStore, referenced: set[str], *, runs_older_than_s: float) -> int:
    """Delete dataset, run and staged-file directories no stored array points to (an upload or a run
    interrupted by a crash: its SQL rows never committed); how many. Datasets are only written
    by the API server, so at its start-up none is in progress; a run's directory may be
    written by a Dask worker right now, so only old ones go."""
    removed = 0
    now = time.time()
    for kind in ("datasets", "runs", "staged"):  # staged: files kept for a background job
        for name, modified in store.children(kind).items():
            prefix = f"{kind}/{name}"
            if prefix in referenced:
                continue
            if kind == "runs" and not modified:  # an S3 'directory': its newest object's
                modified = store.last_modified(prefix)
            if kind == "runs" and modified and now - modified < runs_older_than_s:
                continue
            store.delete(prefix)
            removed += 1
            log.info("removed %s from the array store: nothing refers to it", prefix)
    return removed
