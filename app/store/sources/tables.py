"""A numeric table read in place: a Parquet file or dataset, an NPY file, a Zarr array or an
AnnData (.h5ad) file on the local filesystem or in S3 (any fsspec protocol), read by row range,
never copied.

`inspect_table` reads metadata only (Parquet footers, the NPY header, the Zarr array's metadata
document) and records each object's rows, size and version (S3: its ETag; else its mtime).
`SourceTable.read` then reads only the files, row groups or chunks overlapping the rows asked
for, refusing (`SourceError`) an object that changed since it was recorded, a missing value or a
NaN, naming the object, the row and the column. A `SourceTable` holds nothing open: it can be
rebuilt from what it records and sent to a Dask worker, whose tasks read their own rows.

Options (credentials, endpoints) are passed to fsspec and nowhere else: no message and no repr
repeats them.

This module is the face only: `formats` tells which format a path holds, each format is read
by its own module (`parquet_source`, `npy_source`, `zarr_source`), and they share `filesystems`
(the filesystem, versions, messages without options), `values` (the finite-number check) and
`source_types` (`SourceError` and `SourceFile`, re-exported here, kept apart so that no format
module imports this one)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.store.sources import block_cache
from app.store.sources.csv_source import csv_strings, inspect_csv, read_csv
from app.store.sources.filesystems import filesystem, normal_path, path_of, reading, version
from app.store.sources.formats import FORMATS, READ, detect
from app.store.sources.h5ad_source import h5ad_strings, inspect_h5ad, read_h5ad
from app.store.sources.npy_source import inspect_npy, read_npy
from app.store.sources.parquet_source import (
    inspect_parquet,
    parquet_blocks,
    parquet_strings,
    read_parquet,
)
from app.store.sources.source_types import Layout, SourceError, SourceFile
from app.store.sources.values import require_finite
from app.store.sources.zarr_source import inspect_zarr, read_zarr, zarr_chunk_rows, zarr_version

__all__ = ["SourceError", "SourceFile", "SourceTable", "inspect_table"]

NAMED_COLUMNS = ("parquet", "csv", "h5ad")  # formats whose columns have names (ids, classes)

# A block of a source read at once holds at most this many bytes (as float64, what the sink
# summarises in): 65,536 rows of 10,000 columns would be 4.9 GiB, so wide tables read fewer rows.
BLOCK_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class SourceTable:
    """A table read where it lives; nothing of it is held open or in memory."""

    protocol: str  # "file" or "s3"
    options: dict[str, Any] = field(repr=False, hash=False)  # fsspec options, never shown
    format: str  # "parquet" | "npy" | "zarr"
    files: tuple[SourceFile, ...]  # in row order (npy, zarr: one, the file or the array's root)
    columns: tuple[str, ...]  # the feature columns (npy, zarr: "x0", "x1", ...)
    dtype: str  # "float32" or "float64"
    n_rows: int

    def __repr__(self) -> str:
        where = self.files[0].url if self.files else f"{self.protocol}://"
        more = f" and {len(self.files) - 1} more files" if len(self.files) > 1 else ""
        return (
            f"SourceTable({self.format} at {where}{more}: {self.n_rows} rows x "
            f"{len(self.columns)} columns {self.dtype})"
        )

    # -- reading ----------------------------------------------------------------------------

    def block_rows(self, rows: int) -> int:
        """At most ``rows`` rows, and no more than BLOCK_BYTES of them."""
        return max(1, min(rows, BLOCK_BYTES // (8 * max(1, len(self.columns)))))

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) as a C-contiguous (n, d) array of `dtype`, read from the files,
        row groups or chunks that overlap them only."""
        start, stop = self._bounds(start, stop)
        files, first = self._overlapping(start, stop)
        return _read_rows(
            self.protocol,
            self.options,
            self.format,
            files,
            self.columns,
            self.dtype,
            start,
            stop,
            first,
        )

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """Consecutive blocks of at most ``rows`` rows and BLOCK_BYTES (all but the last of the
        same size, or for Zarr a whole number of its chunks), the whole table in order; never
        held whole."""
        if rows < 1:
            raise ValueError("blocks need at least one row")
        rows = self.block_rows(rows)
        if self.format == "parquet":
            yield from parquet_blocks(
                self.protocol, self.options, self.files, self.columns, self.dtype, rows
            )
            return
        step = rows
        if self.format == "zarr" and self.files:
            chunk = zarr_chunk_rows(self.files[0], self.options)
            if rows >= chunk:
                step = rows - rows % chunk
        for lo in range(0, self.n_rows, step):
            yield self.read(lo, min(lo + step, self.n_rows))

    def strings(self, column: str, start: int = 0, stop: int | None = None) -> list[str]:
        """A Parquet column's (an AnnData's `obs` column's) values as text ("" for a null) for
        rows [start, stop): ids, classes."""
        if self.format not in NAMED_COLUMNS:
            raise SourceError(
                f"{self._where()}: an {self.format.upper()} array has no named columns "
                f"(asked for {column!r}); only a Parquet or CSV table or an AnnData file has"
            )
        start, stop = self._bounds(start, stop)
        files, first = self._overlapping(start, stop)
        fs = filesystem(self.protocol, self.options)
        if self.format == "h5ad":
            return h5ad_strings(fs, self.protocol, self.options, files[0], column, start, stop)
        if self.format == "csv":
            return csv_strings(fs, self.protocol, self.options, files, first, column, start, stop)
        return parquet_strings(self.protocol, self.options, files, first, column, start, stop)

    def dask_array(self, rows_per_task: int) -> Any:
        """A lazy ``dask.array`` of shape (n_rows, d): each task reads its own rows (about
        ``rows_per_task``) from the source by calling `_read_rows` with the protocol, options,
        format, the files it overlaps, the columns and its row range: nothing open is sent. A
        fit reads it once per pass: the rows a task read are kept on its machine's disk for the
        next pass (``block_cache.py``)."""
        import dask
        import dask.array as da

        if rows_per_task < 1:
            raise ValueError("a task reads at least one row")
        d = len(self.columns)
        if self.n_rows == 0:
            return da.zeros((0, d), dtype=self.dtype)
        read = dask.delayed(_read_block, pure=True)
        parts = []
        for lo in range(0, self.n_rows, rows_per_task):
            hi = min(lo + rows_per_task, self.n_rows)
            files, first = self._overlapping(lo, hi)
            task = read(
                self.protocol,
                self.options,
                self.format,
                files,
                self.columns,
                self.dtype,
                lo,
                hi,
                first,
            )
            parts.append(da.from_delayed(task, shape=(hi - lo, d), dtype=self.dtype))
        return parts[0] if len(parts) == 1 else da.concatenate(parts, axis=0)

    def current_versions(self) -> list[tuple[str, str | None]]:
        """Each file's URL and its version now (None when it is gone): one request per file."""
        fs = filesystem(self.protocol, self.options)
        found: list[tuple[str, str | None]] = []
        for file in self.files:
            path = path_of(file.url, self.protocol)
            with reading(file.url, self.options, "checked", missing_passes=True):
                if self.format == "zarr":
                    found.append((file.url, zarr_version(fs, path)))
                    continue
                fs.invalidate_cache(path)
                try:
                    info = fs.info(path)
                except FileNotFoundError:
                    found.append((file.url, None))
                    continue
                found.append((file.url, version(info)))
        return found

    # -- helpers ----------------------------------------------------------------------------

    def _where(self) -> str:
        return self.files[0].url if self.files else f"{self.protocol}://"

    def _bounds(self, start: int, stop: int | None) -> tuple[int, int]:
        if start < 0 or (stop is not None and stop < 0):
            raise SourceError(f"{self._where()}: rows [{start}, {stop}) are not a row range")
        stop = self.n_rows if stop is None else min(stop, self.n_rows)
        return min(start, stop), stop

    def _overlapping(self, start: int, stop: int) -> tuple[tuple[SourceFile, ...], int]:
        """The files holding rows [start, stop) and the table row the first of them starts at."""
        chosen: list[SourceFile] = []
        first = 0
        offset = 0
        for file in self.files:
            if offset < stop and start < offset + file.rows:
                if not chosen:
                    first = offset
                chosen.append(file)
            offset += file.rows
        return tuple(chosen), first


def inspect_table(
    protocol: str,
    path: str,
    options: dict[str, Any],
    format: str = "auto",
    columns: list[str] | None = None,
    known: Sequence[SourceFile] = (),
) -> SourceTable:
    """The table at ``path`` (what fsspec takes for ``protocol``: an absolute local path, or
    "bucket/key" for S3), from its metadata only. ``known``: the objects as a sync's earlier
    record has them; those unchanged (version and size) are not read again (Parquet, CSV)."""
    recorded = {f.url: f for f in known}
    fs = filesystem(protocol, options)
    path = normal_path(fs, path)
    url = f"{protocol}://{path}"
    with reading(url, options, "inspected"):
        fs.invalidate_cache(path)
        info = fs.info(path)
        is_dir = info.get("type") == "directory"
        chosen = detect(fs, path, url, is_dir) if format == "auto" else format.lower()
        if chosen not in FORMATS:
            raise SourceError(f"{url}: {format!r} is not a format read in place ({READ})")
        if chosen == "parquet":
            layout = inspect_parquet(
                fs, protocol, path, url, options, info, is_dir, columns, recorded
            )
            return _table(protocol, options, chosen, layout)
        if chosen == "csv":
            layout = inspect_csv(fs, protocol, path, url, options, info, is_dir, columns, recorded)
            return _table(protocol, options, chosen, layout)
        if columns is not None:
            raise SourceError(
                f"{url}: an {chosen.upper()} file's features are all its columns; columns "
                "choose among a Parquet table's"
            )
        if chosen == "h5ad":
            if is_dir:
                raise SourceError(f"{url} is a directory, not an AnnData (.h5ad) file")
            return _table(protocol, options, chosen, inspect_h5ad(fs, path, url, options, info))
        if chosen == "npy":
            if is_dir:
                raise SourceError(f"{url} is a directory, not an NPY file")
            return _table(protocol, options, chosen, inspect_npy(fs, path, url, options, info))
        if not is_dir:
            raise SourceError(f"{url} is a file, not a Zarr array's directory")
        return _table(protocol, options, chosen, inspect_zarr(fs, path, url, options))


def _table(protocol: str, options: dict[str, Any], format: str, layout: Layout) -> SourceTable:
    return SourceTable(
        protocol=protocol,
        options=options,
        format=format,
        files=layout.files,
        columns=layout.columns,
        dtype=layout.dtype,
        n_rows=sum(f.rows for f in layout.files),
    )


# -- reading (module level: what a Dask task calls) -------------------------------------------


def _read_block(
    protocol: str,
    options: dict[str, Any],
    format: str,
    files: Sequence[SourceFile],
    columns: Sequence[str],
    dtype: str,
    start: int,
    stop: int,
    first: int,
) -> np.ndarray:
    """`_read_rows`, kept for the next pass of the same fit (or the next run)."""
    name = block_cache.block_name(format, files, columns, dtype, start, stop, first)
    return block_cache.cached(
        name,
        lambda: _read_rows(protocol, options, format, files, columns, dtype, start, stop, first),
    )


def _read_rows(
    protocol: str,
    options: dict[str, Any],
    format: str,
    files: Sequence[SourceFile],
    columns: Sequence[str],
    dtype: str,
    start: int,
    stop: int,
    first: int,
) -> np.ndarray:
    """Rows [start, stop) of the table whose ``files`` (those overlapping the rows, in order)
    begin at table row ``first``: a C-contiguous (stop - start, len(columns)) array."""
    out = np.empty((max(0, stop - start), len(columns)), dtype=dtype)
    if out.shape[0] == 0:
        return out
    fs = filesystem(protocol, options)
    multi = len(files) > 1 or first > 0
    offset = first
    for file in files:
        lo, hi = max(start, offset), min(stop, offset + file.rows)
        if lo < hi:
            dest = out[lo - start : hi - start]
            a, b = lo - offset, hi - offset
            if format == "parquet":
                read_parquet(fs, options, file, columns, a, b, dest, offset, multi)
            elif format == "npy":
                read_npy(fs, protocol, options, file, len(columns), a, b, dest)
            elif format == "zarr":
                read_zarr(fs, protocol, options, file, len(columns), a, b, dest)
            elif format == "csv":
                read_csv(fs, protocol, options, file, columns, a, b, dest, offset, multi)
            elif format == "h5ad":
                read_h5ad(fs, protocol, options, file, tuple(columns), a, b, dest)
            else:
                raise SourceError(f"{file.url}: {format!r} is not a format read in place")
            if format not in ("parquet", "csv"):
                require_finite(dest, columns, file.url, lo, a, multi)
        offset += file.rows
    return out
