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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import zarr
import zarr.codecs
import zarr.storage
from numpy.typing import NDArray

log = logging.getLogger(__name__)

BYTES_CHUNK = 16 * 1024 * 1024  # a blob's chunk: whole pictures read in a few requests
# Measured features (floats) barely compress, and compressing them costs more than writing them:
# raw chunks. Integers (labels, class codes, pixel maps) and bytes (ids, pictures) get
# byte-shuffled LZ4, fast both ways (bit-shuffling was 3x slower to write).
_LZ4: Any = (zarr.codecs.BloscCodec(cname="lz4", clevel=1, shuffle="shuffle"),)


def compressors_for(dtype: np.dtype) -> Any:
    """The Zarr compressors of a stored array of this dtype."""
    return None if dtype.kind == "f" else _LZ4


class StoreUnavailable(Exception):
    """The array store cannot be read or written (a wrong URL, no permission, no network)."""


@dataclass(frozen=True)
class StoredInfo:
    """What SQL keeps about one stored array."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    chunk_rows: int
    content_hash: str
    nbytes: int


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
            try:
                if _is_url(self.location):
                    import fsspec
                    from fsspec.utils import get_protocol

                    options = dict(self._storage_options)
                    if fsspec.get_filesystem_class(get_protocol(self.location)).async_impl:
                        # zarr awaits the filesystem's coroutines on its own event loop, so
                        # it must be an asynchronous instance (as zarr's `from_url` makes it);
                        # a synchronous one (s3fs by default) would run our own calls on
                        # fsspec's loop and share an HTTP session across both ("attached to
                        # a different loop"). `_fs_call` runs ours on zarr's loop too.
                        options.setdefault("asynchronous", True)
                    fs, root = fsspec.core.url_to_fs(self.location, **options)
                    store: Any = zarr.storage.FsspecStore(
                        fs=fs if fs.async_impl else _async_wrapper(fs), path=root
                    )
                else:
                    from fsspec.implementations.local import LocalFileSystem

                    root = str(Path(self.location.removeprefix("file://")).resolve())
                    Path(root).mkdir(parents=True, exist_ok=True)
                    fs = LocalFileSystem()
                    store = zarr.storage.LocalStore(root)
            except Exception as exc:  # wrong scheme, missing driver, unwritable directory
                raise StoreUnavailable(
                    f"the array store {self.location!r} cannot be opened: {exc}"
                ) from exc
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
        return RowWriter(self, key, n_columns, np.dtype(dtype), chunk_rows)

    def write(self, key: str, array: NDArray, *, chunk_rows: int) -> StoredInfo:
        """A whole 1-D or 2-D array, in row chunks."""
        writer = self.row_writer(
            key,
            n_columns=array.shape[1] if array.ndim == 2 else None,
            dtype=array.dtype,
            chunk_rows=chunk_rows,
        )
        writer.append(array)
        return writer.close()

    def _create_array(
        self, key: str, shape: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype
    ) -> zarr.Array:
        """A new array under ``key`` (replacing any), zeros until written; a store that
        cannot take it is ``StoreUnavailable``."""
        zarr_store, _, _ = self._open()
        try:
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
        except Exception as exc:
            raise StoreUnavailable(f"writing {key!r} to the array store failed: {exc}") from exc

    def write_tiled(self, key: str, image: NDArray, *, tile: int) -> StoredInfo:
        """A whole 2-D or 3-D array (an image's rows, columns and channels) in ``tile`` x
        ``tile`` chunks, so a region reads only the chunks under it (`read_region`)."""
        image = np.ascontiguousarray(image)
        chunks = (tile, tile, *image.shape[2:])
        array = self._create_array(key, image.shape, chunks, image.dtype)
        try:
            array[...] = image
        except Exception as exc:
            raise StoreUnavailable(f"writing {key!r} to the array store failed: {exc}") from exc
        return StoredInfo(
            key=key,
            shape=tuple(int(s) for s in image.shape),
            dtype=image.dtype.name,
            chunk_rows=tile,
            content_hash=hashlib.blake2b(image.data.cast("B"), digest_size=16).hexdigest(),
            nbytes=int(image.nbytes),
        )

    def tiled_writer(
        self, key: str, *, shape: tuple[int, ...], dtype: str | np.dtype, tile: int
    ) -> TiledWriter:
        return TiledWriter(self, key, shape, np.dtype(dtype), tile)

    def write_bytes(self, key: str, data: bytes) -> StoredInfo:
        return self.write(key, np.frombuffer(data, dtype=np.uint8), chunk_rows=BYTES_CHUNK)

    def string_writer(self, key: str, *, chunk_rows: int) -> StringWriter:
        return StringWriter(self, key, chunk_rows)

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
        try:
            if self._fs_call("exists", path):
                self._fs_call("rm", path, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise StoreUnavailable(
                f"deleting {prefix!r} from the array store failed: {exc}"
            ) from exc

    def children(self, prefix: str) -> dict[str, float]:
        """Names directly under ``prefix``, each with its modification time (epoch seconds; 0
        when the backend does not say, e.g. an S3 'directory')."""
        path = self._forget_listings(prefix)
        try:
            entries = self._fs_call("ls", path, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            raise StoreUnavailable(f"listing {prefix!r} in the array store failed: {exc}") from exc
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
        try:
            entries = self._fs_call("find", path, detail=True)
        except FileNotFoundError:
            return 0.0
        except Exception as exc:
            raise StoreUnavailable(f"listing {prefix!r} in the array store failed: {exc}") from exc
        return max((_modified(entry) for entry in entries.values()), default=0.0)

    def check(self) -> None:
        """Write, read back and delete a probe; StoreUnavailable saying why if any step fails."""
        key = f"health/{secrets.token_hex(6)}"
        try:
            self.write(key, np.arange(3, dtype=np.int64), chunk_rows=3)
            if not np.array_equal(self.read(key), np.arange(3)):
                raise StoreUnavailable("the array store returned other bytes than were written")
            self.delete(key)
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise StoreUnavailable(
                f"the array store {self.location!r} is not usable: {exc}"
            ) from exc


class RowWriter:
    """Appends row blocks to a new array, a whole chunk at a time (a partial last block is
    buffered), hashing the bytes as they pass; ``close`` writes the tail and says what was
    stored. Memory: about two chunks.

    Whole chunks are written, and hashed, on two threads of the writer's own while the caller
    parses and checks the next rows: writing a table's chunks took as long as parsing it (the
    kernel's page-cache writes on a local disk, a PUT each on S3), hashing half as long, and
    both release the GIL. One chunk is in flight at a time, so chunks land and are hashed in
    order, and an error surfaces at the next ``append`` or at ``close``. A writer given up on
    (an upload refused half-way) must be ``abort``-ed before its arrays are deleted: the write
    in flight would recreate them."""

    def __init__(
        self, store: ArrayStore, key: str, n_columns: int | None, dtype: np.dtype, chunk_rows: int
    ):
        self._store = store
        self.key = key
        self._dtype = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        self._n_columns = n_columns
        self._chunk_rows = max(int(chunk_rows), 1)
        shape: tuple[int, ...] = (0,) if n_columns is None else (0, n_columns)
        chunks: tuple[int, ...] = (
            (self._chunk_rows,) if n_columns is None else (self._chunk_rows, max(n_columns, 1))
        )
        self._array = store._create_array(key, shape, chunks, self._dtype)
        self._rows = 0  # rows handed to the writing thread (written once it is done)
        self._capacity = 0  # the array's length: grown by doubling, cut to the rows at close
        self._pending: list[NDArray] = []
        self._pending_rows = 0
        self._hash = hashlib.blake2b(digest_size=16)
        self._thread: ThreadPoolExecutor | None = None
        self._in_flight: list[Future[None]] = []

    @property
    def rows(self) -> int:
        return self._rows + self._pending_rows

    def append(self, block: NDArray) -> None:
        block = np.asarray(block, dtype=self._dtype)
        if self._n_columns is not None and (block.ndim != 2 or block.shape[1] != self._n_columns):
            raise ValueError(f"expected rows of {self._n_columns} columns, got {block.shape}")
        self._pending.append(block)
        self._pending_rows += block.shape[0]
        if self._pending_rows >= self._chunk_rows:
            joined = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
            whole = (joined.shape[0] // self._chunk_rows) * self._chunk_rows
            rest = joined[whole:]
            self._pending = [rest] if rest.shape[0] else []
            self._pending_rows = rest.shape[0]
            self._write_behind(joined[:whole])

    def _write_behind(self, block: NDArray) -> None:
        """``block`` written and hashed on the writer's threads, once the chunk before it is."""
        self._wait()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(2, thread_name_prefix="store-write")
        block = np.ascontiguousarray(block)
        start = self._rows
        self._rows += block.shape[0]
        self._in_flight = [
            self._thread.submit(self._put, start, block),
            self._thread.submit(self._hash.update, block.data.cast("B")),
        ]

    def _wait(self) -> None:
        """Until the chunk in flight is written and hashed; its error, if it failed."""
        in_flight, self._in_flight = self._in_flight, []
        try:
            for done in in_flight:
                done.result()
        except BaseException:
            self.abort(in_flight)
            raise

    def _write(self, start: int, block: NDArray) -> None:
        if block.shape[0] == 0:
            return
        block = np.ascontiguousarray(block)
        self._put(start, block)
        self._hash.update(block.data.cast("B"))  # the bytes in place, not a copy of them

    def _put(self, start: int, block: NDArray) -> None:
        stop = start + block.shape[0]
        try:
            if stop > self._capacity:
                # Each resize rewrites the array's metadata: doubling keeps them to log2 of
                # the chunks (one per chunk cost a 1M-row upload 0.2 s).
                self._capacity = max(stop, 2 * self._capacity)
                self._array.resize((self._capacity, *self._array.shape[1:]))
            self._array[start:stop] = block
        except Exception as exc:
            raise StoreUnavailable(
                f"writing {self.key!r} to the array store failed: {exc}"
            ) from exc

    def abort(self, in_flight: list[Future[None]] | None = None) -> None:
        """Stop writing: the chunk in flight ends (its error dropped), nothing more starts."""
        for done in [*(in_flight or []), *self._in_flight]:
            done.exception()  # waits for it; what went wrong no longer matters
        self._in_flight = []
        self._stop_threads()
        self._pending, self._pending_rows = [], 0

    def _stop_threads(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    def close(self) -> StoredInfo:
        self._wait()
        self._stop_threads()
        if self._pending:
            tail = np.concatenate(self._pending)
            self._pending, self._pending_rows = [], 0
            self._write(self._rows, tail)
            self._rows += tail.shape[0]
        if self._capacity != self._rows:
            try:
                self._array.resize((self._rows, *self._array.shape[1:]))
            except Exception as exc:
                raise StoreUnavailable(
                    f"writing {self.key!r} to the array store failed: {exc}"
                ) from exc
            self._capacity = self._rows
        shape = tuple(int(s) for s in self._array.shape)
        return StoredInfo(
            key=self.key,
            shape=shape,
            dtype=self._dtype.name,
            chunk_rows=self._chunk_rows,
            content_hash=self._hash.hexdigest(),
            nbytes=int(np.prod(shape)) * self._dtype.itemsize,
        )


class TiledWriter:
    """Fills a new image-shaped array (rows, columns[, channels]) of ``tile`` x ``tile``
    chunks band by band (a picture too large to hold: a whole slide, its pyramid's levels),
    hashing the bands in the order they come. Memory: the band the caller holds."""

    def __init__(
        self, store: ArrayStore, key: str, shape: tuple[int, ...], dtype: np.dtype, tile: int
    ):
        self.key = key
        self.shape = tuple(int(s) for s in shape)
        self._dtype = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        self._tile = tile
        self._array = store._create_array(
            key, self.shape, (tile, tile, *self.shape[2:]), self._dtype
        )
        self._hash = hashlib.blake2b(digest_size=16)

    def write(self, row: int, column: int, block: NDArray) -> None:
        """``block`` at (row, column); writes aligned to whole tiles cost no read back."""
        block = np.ascontiguousarray(block, dtype=self._dtype)
        try:
            self._array[row : row + block.shape[0], column : column + block.shape[1]] = block
        except Exception as exc:
            raise StoreUnavailable(
                f"writing {self.key!r} to the array store failed: {exc}"
            ) from exc
        self._hash.update(f"{row},{column}".encode())
        self._hash.update(block.data.cast("B"))

    def read(self, start: int, stop: int) -> NDArray:
        """Rows [start, stop) as written so far (whole rows)."""
        try:
            return np.asarray(self._array[start:stop])
        except Exception as exc:
            raise StoreUnavailable(
                f"reading {self.key!r} from the array store failed: {exc}"
            ) from exc

    def close(self) -> StoredInfo:
        return StoredInfo(
            key=self.key,
            shape=self.shape,
            dtype=self._dtype.name,
            chunk_rows=self._tile,
            content_hash=self._hash.hexdigest(),
            nbytes=int(np.prod(self.shape)) * self._dtype.itemsize,
        )


class StringWriter:
    """Appends batches of strings: their UTF-8 bytes to ``key/bytes``, the running end offset
    of each to ``key/offsets`` (which starts with 0)."""

    def __init__(self, store: ArrayStore, key: str, chunk_rows: int):
        self.key = key
        self._chunk_rows = chunk_rows
        self._offsets = store.row_writer(
            f"{key}/offsets", n_columns=None, dtype="int64", chunk_rows=chunk_rows
        )
        self._bytes = store.row_writer(
            f"{key}/bytes", n_columns=None, dtype="uint8", chunk_rows=BYTES_CHUNK
        )
        self._offsets.append(np.zeros(1, dtype=np.int64))
        self._position = 0

    def append(self, values: list[str]) -> None:
        if not values:
            return
        encoded = [v.encode() for v in values]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        self._offsets.append(self._position + np.cumsum(lengths))
        self._bytes.append(np.frombuffer(b"".join(encoded), dtype=np.uint8))
        self._position += int(lengths.sum())

    def abort(self) -> None:
        self._offsets.abort()
        self._bytes.abort()

    def close(self) -> StoredInfo:
        offsets = self._offsets.close()
        data = self._bytes.close()
        digest = hashlib.blake2b(
            f"{offsets.content_hash}{data.content_hash}".encode(), digest_size=16
        ).hexdigest()
        n = offsets.shape[0] - 1
        return StoredInfo(
            self.key, (n,), "utf8", self._chunk_rows, digest, data.nbytes + 8 * (n + 1)
        )


def _modified(entry: dict[str, Any]) -> float:
    """An fsspec listing entry's modification time in epoch seconds (0 when it has none)."""
    modified = entry.get("mtime") or entry.get("LastModified") or 0
    return modified.timestamp() if hasattr(modified, "timestamp") else float(modified)


def _async_wrapper(fs: Any) -> Any:
    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

    return AsyncFileSystemWrapper(fs)


def sweep_orphans(store: ArrayStore, referenced: set[str], *, runs_older_than_s: float) -> int:
    """Delete dataset and run directories no stored array points to (an upload or a run
    interrupted by a crash: its SQL rows never committed); how many. Datasets are only written
    by the API server, so at its start-up none is in progress; a run's directory may be
    written by a Dask worker right now, so only old ones go."""
    removed = 0
    now = time.time()
    for kind in ("datasets", "runs"):
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
