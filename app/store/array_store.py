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
# Floats barely compress and the store is read far more often than written: chunks are raw
# bytes with byte-shuffled LZ4 (fast both ways; ids, codes and images shrink).
_COMPRESSORS: Any = (zarr.codecs.BloscCodec(cname="lz4", clevel=1, shuffle="bitshuffle"),)


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

                    fs, root = fsspec.core.url_to_fs(self.location, **self._storage_options)
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

    def write_bytes(self, key: str, data: bytes) -> StoredInfo:
        return self.write(key, np.frombuffer(data, dtype=np.uint8), chunk_rows=BYTES_CHUNK)

    def write_strings(self, key: str, values: Iterable[str], *, chunk_rows: int) -> StoredInfo:
        """Strings as UTF-8 bytes plus offsets (``key/offsets`` has n + 1 entries)."""
        offsets = self.row_writer(
            f"{key}/offsets", n_columns=None, dtype="int64", chunk_rows=chunk_rows
        )
        data = self.row_writer(
            f"{key}/bytes", n_columns=None, dtype="uint8", chunk_rows=BYTES_CHUNK
        )
        position = 0
        offsets.append(np.zeros(1, dtype=np.int64))
        batch: list[str] = []

        def flush() -> None:
            nonlocal position
            encoded = [s.encode() for s in batch]
            lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
            offsets.append(position + np.cumsum(lengths))
            data.append(np.frombuffer(b"".join(encoded), dtype=np.uint8))
            position += int(lengths.sum())
            batch.clear()

        for value in values:
            batch.append(value)
            if len(batch) >= chunk_rows:
                flush()
        flush()
        offsets_info = offsets.close()
        data_info = data.close()
        digest = hashlib.blake2b(
            f"{offsets_info.content_hash}{data_info.content_hash}".encode(), digest_size=16
        ).hexdigest()
        n = offsets_info.shape[0] - 1
        return StoredInfo(key, (n,), "utf8", chunk_rows, digest, data_info.nbytes + 8 * (n + 1))

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

    def iter_blocks(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[NDArray]:
        """Rows [start, stop) one stored chunk at a time: memory of one chunk, not the array."""
        array = self._array(key)
        rows = array.shape[0] if stop is None else min(stop, array.shape[0])
        step = array.chunks[0]
        first = start - start % step
        for lo in range(first, rows, step):
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
        _, fs, _ = self._open()
        path = self._path(prefix)
        try:
            if fs.exists(path):
                fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise StoreUnavailable(
                f"deleting {prefix!r} from the array store failed: {exc}"
            ) from exc

    def children(self, prefix: str) -> dict[str, float]:
        """Names directly under ``prefix``, each with its modification time (epoch seconds; 0
        when the backend does not say, e.g. an S3 'directory')."""
        _, fs, _ = self._open()
        path = self._path(prefix)
        try:
            entries = fs.ls(path, detail=True)
        except FileNotFoundError:
            return {}
        found: dict[str, float] = {}
        for entry in entries:
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if name == "zarr.json":  # the group's own metadata, not a child
                continue
            modified = entry.get("mtime") or entry.get("LastModified") or 0
            found[name] = (
                modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
            )
        return found

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
    stored. Memory: one chunk."""

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
        zarr_store, _, _ = store._open()
        try:
            self._array = zarr.create_array(
                store=zarr_store,
                name=key,
                shape=shape,
                chunks=chunks,
                dtype=self._dtype,
                compressors=_COMPRESSORS,
                fill_value=0,
                overwrite=True,
            )
        except Exception as exc:
            raise StoreUnavailable(f"writing {key!r} to the array store failed: {exc}") from exc
        self._rows = 0
        self._pending: list[NDArray] = []
        self._pending_rows = 0
        self._hash = hashlib.blake2b(digest_size=16)

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
            self._write(joined[:whole])
            rest = joined[whole:]
            self._pending = [rest] if rest.shape[0] else []
            self._pending_rows = rest.shape[0]

    def _write(self, block: NDArray) -> None:
        if block.shape[0] == 0:
            return
        block = np.ascontiguousarray(block)
        stop = self._rows + block.shape[0]
        try:
            self._array.resize((stop, *self._array.shape[1:]))
            self._array[self._rows : stop] = block
        except Exception as exc:
            raise StoreUnavailable(
                f"writing {self.key!r} to the array store failed: {exc}"
            ) from exc
        self._hash.update(block.tobytes())
        self._rows = stop

    def close(self) -> StoredInfo:
        if self._pending:
            self._write(np.concatenate(self._pending))
            self._pending, self._pending_rows = [], 0
        shape = tuple(int(s) for s in self._array.shape)
        return StoredInfo(
            key=self.key,
            shape=shape,
            dtype=self._dtype.name,
            chunk_rows=self._chunk_rows,
            content_hash=self._hash.hexdigest(),
            nbytes=int(np.prod(shape)) * self._dtype.itemsize,
        )


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
            if kind == "runs" and modified and now - modified < runs_older_than_s:
                continue
            store.delete(prefix)
            removed += 1
            log.info("removed %s from the array store: nothing refers to it", prefix)
    return removed
