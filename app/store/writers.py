"""Writers that fill a new stored array piece by piece, in bounded memory: rows (a table as
it is parsed), tiles (a slide band by band) and strings (item ids)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.store.stored import StoredInfo, store_errors

# A new array in the store: create(key, shape, chunks, dtype) (ArrayStore._create_array).
CreateArray = Callable[[str, tuple[int, ...], tuple[int, ...], np.dtype], Any]


def _writing(key: str) -> str:
    return f"writing {key!r} to the array store failed"


# A chunk is at most this many bytes, whatever the row count asked: a chunk is the unit that is
# buffered, compressed and read whole, and 65,536 rows of a 4,000-column table would make it
# 1 GiB (a 20-row upload spent 8 s filling and compressing one such chunk).
MAX_CHUNK_BYTES = 16 * 1024**2


def _rows_per_chunk(asked: int, n_columns: int | None, dtype: np.dtype) -> int:
    row_bytes = max(n_columns or 1, 1) * dtype.itemsize
    return max(1, min(asked, MAX_CHUNK_BYTES // row_bytes))


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
        self, create: CreateArray, key: str, n_columns: int | None, dtype: np.dtype, chunk_rows: int
    ):
        self.key = key
        self._dtype = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        self._n_columns = n_columns
        self._chunk_rows = _rows_per_chunk(int(chunk_rows), n_columns, self._dtype)
        shape: tuple[int, ...] = (0,) if n_columns is None else (0, n_columns)
        chunks: tuple[int, ...] = (
            (self._chunk_rows,) if n_columns is None else (self._chunk_rows, max(n_columns, 1))
        )
        self._array = create(key, shape, chunks, self._dtype)
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

    def append(self, block: NDArray, *, last: bool = False) -> None:
        """``last``: nothing follows, so ``close`` writes what is pending on the caller's
        thread (starting the writer's threads for one small chunk cost more than writing it)."""
        block = np.asarray(block, dtype=self._dtype)
        if self._n_columns is not None and (block.ndim != 2 or block.shape[1] != self._n_columns):
            raise ValueError(f"expected rows of {self._n_columns} columns, got {block.shape}")
        self._pending.append(block)
        self._pending_rows += block.shape[0]
        if self._pending_rows >= self._chunk_rows and not last:
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
        with store_errors(_writing(self.key)):
            if stop > self._capacity:
                # Each resize rewrites the array's metadata: doubling keeps them to log2 of
                # the chunks (one per chunk cost a 1M-row upload 0.2 s).
                self._capacity = max(stop, 2 * self._capacity)
                self._array.resize((self._capacity, *self._array.shape[1:]))
            self._array[start:stop] = block

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
            with store_errors(_writing(self.key)):
                self._array.resize((self._rows, *self._array.shape[1:]))
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
        self, create: CreateArray, key: str, shape: tuple[int, ...], dtype: np.dtype, tile: int
    ):
        self.key = key
        self.shape = tuple(int(s) for s in shape)
        self._dtype = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        self._tile = tile
        self._array = create(key, self.shape, (tile, tile, *self.shape[2:]), self._dtype)
        self._hash = hashlib.blake2b(digest_size=16)

    def write(self, row: int, column: int, block: NDArray) -> None:
        """``block`` at (row, column); writes aligned to whole tiles cost no read back."""
        block = np.ascontiguousarray(block, dtype=self._dtype)
        with store_errors(_writing(self.key)):
            self._array[row : row + block.shape[0], column : column + block.shape[1]] = block
        self._hash.update(f"{row},{column}".encode())
        self._hash.update(block.data.cast("B"))

    def read(self, start: int, stop: int) -> NDArray:
        """Rows [start, stop) as written so far (whole rows)."""
        with store_errors(f"reading {self.key!r} from the array store failed"):
            return np.asarray(self._array[start:stop])

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

    def __init__(self, key: str, chunk_rows: int, offsets: RowWriter, data: RowWriter):
        self.key = key
        self._chunk_rows = chunk_rows
        self._offsets = offsets  # int64 rows under key/offsets
        self._bytes = data  # uint8 rows under key/bytes
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
