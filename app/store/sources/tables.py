"""A numeric table read in place: a Parquet file or dataset, an NPY file or a Zarr array on the
local filesystem or in S3 (any fsspec protocol), read by row range, never copied.

`inspect_table` reads metadata only (Parquet footers, the NPY header, the Zarr array's metadata
document) and records each object's rows, size and version (S3: its ETag; else its mtime).
`SourceTable.read` then reads only the files, row groups or chunks overlapping the rows asked
for, refusing (`SourceError`) an object that changed since it was recorded, a missing value or a
NaN, naming the object, the row and the column. A `SourceTable` holds nothing open: it can be
rebuilt from what it records and sent to a Dask worker, whose tasks read their own rows.

Options (credentials, endpoints) are passed to fsspec and nowhere else: no message and no repr
repeats them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SourceError", "SourceFile", "SourceTable", "inspect_table"]

FORMATS = ("parquet", "npy", "zarr")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".csv.bz2", ".csv.zst", ".txt")
_ZARR_METADATA = ("zarr.json", ".zarray")
_NPY_BLOCK = 1 << 16  # the header (and the small over-read after a range) in one request
_MESSAGE_CHARS = 300  # of an underlying error's text, after credentials are taken out


class SourceError(ValueError):
    """The source cannot be read as asked (missing object, unreadable format, non-numeric column, a
    changed object); the message names the object (its URL), the row and the column where it can,
    and never an option value (credentials)."""


@dataclass(frozen=True)
class SourceFile:
    url: str  # "s3://bucket/prefix/part-0003.parquet" or "file:///abs/x.parquet"
    rows: int
    size: int
    version: str  # the ETag for S3, else the mtime (as text): how a change is seen


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
        """Consecutive blocks of at most ``rows`` rows (all but the last exactly ``rows``, or for
        Zarr a whole number of its chunks), the whole table in order; never held whole."""
        if rows < 1:
            raise ValueError("blocks need at least one row")
        if self.format == "parquet":
            yield from _rechunk(self._parquet_batches(rows), rows)
            return
        step = rows
        if self.format == "zarr" and self.files:
            chunk = self._zarr_chunk_rows()
            if rows >= chunk:
                step = rows - rows % chunk
        for lo in range(0, self.n_rows, step):
            yield self.read(lo, min(lo + step, self.n_rows))

    def strings(self, column: str, start: int = 0, stop: int | None = None) -> list[str]:
        """A Parquet column's values as text ("" for a null) for rows [start, stop): ids,
        classes."""
        if self.format != "parquet":
            raise SourceError(
                f"{self._where()}: an {self.format.upper()} array has no named columns "
                f"(asked for {column!r}); only a Parquet table has"
            )
        start, stop = self._bounds(start, stop)
        files, first = self._overlapping(start, stop)
        fs = _filesystem(self.protocol, self.options)
        values: list[str] = []
        offset = first
        for file in files:
            lo, hi = max(start, offset), min(stop, offset + file.rows)
            if lo < hi:
                for table, _ in _parquet_pieces(
                    fs, self.options, file, [column], lo - offset, hi - offset, strings=True
                ):
                    values.extend(_text(v) for v in table.column(column).to_pylist())
            offset += file.rows
        return values

    def dask_array(self, rows_per_task: int) -> Any:
        """A lazy ``dask.array`` of shape (n_rows, d): each task reads its own rows (about
        ``rows_per_task``) from the source by calling `_read_rows` with the protocol, options,
        format, the files it overlaps, the columns and its row range: nothing open is sent."""
        import dask
        import dask.array as da

        if rows_per_task < 1:
            raise ValueError("a task reads at least one row")
        d = len(self.columns)
        if self.n_rows == 0:
            return da.zeros((0, d), dtype=self.dtype)
        read = dask.delayed(_read_rows, pure=True)
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
        fs = _filesystem(self.protocol, self.options)
        found: list[tuple[str, str | None]] = []
        for file in self.files:
            path = _path_of(file.url, self.protocol)
            with _reading(file.url, self.options, "checked", missing_passes=True):
                if self.format == "zarr":
                    found.append((file.url, _zarr_version(fs, path)))
                    continue
                fs.invalidate_cache(path)
                try:
                    info = fs.info(path)
                except FileNotFoundError:
                    found.append((file.url, None))
                    continue
                found.append((file.url, _version(info)))
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

    def _parquet_batches(self, rows: int) -> Iterator[np.ndarray]:
        """Every row, in order, in record batches of at most ``rows`` rows, each file opened
        once and each row group read once."""
        fs = _filesystem(self.protocol, self.options)
        offset = 0
        for file in self.files:
            with _reading(file.url, self.options), _open_checked(fs, self.protocol, file) as f:
                parquet = _parquet_file(f, file)
                local = 0
                for batch in parquet.iter_batches(batch_size=rows, columns=list(self.columns)):
                    out = np.empty((batch.num_rows, len(self.columns)), dtype=self.dtype)
                    _fill(batch, self.columns, out, file.url, offset + local, local, self._multi)
                    local += batch.num_rows
                    yield out
                if local != file.rows:
                    raise _changed(file.url)
            offset += file.rows

    @property
    def _multi(self) -> bool:
        return len(self.files) > 1

    def _zarr_chunk_rows(self) -> int:
        file = self.files[0]
        with _reading(file.url, self.options):
            array = _zarr_array(file.url, self.options)
            return max(1, int(array.chunks[0]))


def inspect_table(
    protocol: str,
    path: str,
    options: dict[str, Any],
    format: str = "auto",
    columns: list[str] | None = None,
) -> SourceTable:
    """The table at ``path`` (what fsspec takes for ``protocol``: an absolute local path, or
    "bucket/key" for S3), from its metadata only."""
    fs = _filesystem(protocol, options)
    path = _normal_path(fs, path)
    url = f"{protocol}://{path}"
    with _reading(url, options, "inspected"):
        fs.invalidate_cache(path)
        info = fs.info(path)
        is_dir = info.get("type") == "directory"
        chosen = _detect(fs, path, url, is_dir) if format == "auto" else format.lower()
        if chosen == "csv":
            raise SourceError(_csv_refusal(url))
        if chosen not in FORMATS:
            raise SourceError(f"{url}: {format!r} is not a format read in place ({_READ})")
        if chosen == "parquet":
            return _inspect_parquet(fs, protocol, path, url, options, info, is_dir, columns)
        if columns is not None:
            raise SourceError(
                f"{url}: an {chosen.upper()} array has no named columns; columns apply to "
                "Parquet tables"
            )
        if chosen == "npy":
            if is_dir:
                raise SourceError(f"{url} is a directory, not an NPY file")
            return _inspect_npy(fs, protocol, path, url, options, info)
        if not is_dir:
            raise SourceError(f"{url} is a file, not a Zarr array's directory")
        return _inspect_zarr(fs, protocol, path, url, options)


# -- inspecting -------------------------------------------------------------------------------

_READ = (
    "read in place: Parquet (a .parquet file or a directory of them), NPY (.npy) and Zarr "
    "(an array's directory, with zarr.json or .zarray)"
)


def _csv_refusal(url: str) -> str:
    return (
        f"{url}: a CSV cannot be read by row range in place; convert it to Parquet, or upload it"
        f" (formats {_READ})"
    )


def _detect(fs: Any, path: str, url: str, is_dir: bool) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if not is_dir:
        if name.endswith(_PARQUET_SUFFIXES):
            return "parquet"
        if name.endswith(".npy"):
            return "npy"
        if name.endswith(_CSV_SUFFIXES):
            return "csv"
        raise SourceError(f"{url}: not a format read in place; formats {_READ}")
    names = {str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    if names & set(_ZARR_METADATA):
        return "zarr"
    found = [str(p) for p in fs.find(path)]
    if any(_is_parquet(p) for p in found):
        return "parquet"
    if any(p.lower().endswith(_CSV_SUFFIXES) for p in found):
        return "csv"
    raise SourceError(f"{url} holds no table read in place; formats {_READ}")


def _is_parquet(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.lower().endswith(_PARQUET_SUFFIXES) and not name.startswith(("_", "."))


def _is_numeric(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    )


def _inspect_parquet(
    fs: Any,
    protocol: str,
    path: str,
    url: str,
    options: dict[str, Any],
    info: dict[str, Any],
    is_dir: bool,
    columns: list[str] | None,
) -> SourceTable:
    import pyarrow as pa

    if is_dir:
        listing: dict[str, Any] = fs.find(path, detail=True)
        entries = sorted(
            (str(p), e) for p, e in listing.items() if _is_parquet(str(p)) and e["type"] == "file"
        )
        if not entries:
            raise SourceError(f"{url} holds no *.parquet files")
    else:
        entries = [(path, info)]
    files: list[SourceFile] = []
    schema: Any = None
    for file_path, entry in entries:
        file_url = f"{protocol}://{file_path}"
        with (
            _reading(file_url, options, "read as Parquet"),
            fs.open(file_path, "rb", cache_type="none") as f,
        ):
            parquet = _parquet_open(f)
            file_schema = parquet.schema_arrow
            rows = int(parquet.metadata.num_rows)
        if schema is None:
            schema = file_schema
        elif not file_schema.equals(schema):
            raise SourceError(
                f"{file_url} has other columns than {files[0].url} (a Parquet dataset's files "
                "must share one schema)"
            )
        files.append(SourceFile(file_url, rows, int(entry.get("size") or 0), _version(entry)))
    types = {name: schema.field(name).type for name in schema.names}
    if columns is None:
        chosen = [name for name in schema.names if _is_numeric(types[name])]
        if not chosen:
            raise SourceError(f"{url} has no numeric columns to read as features")
    else:
        chosen = list(columns)
        if not chosen:
            raise SourceError(f"{url}: no feature columns were asked for")
        for name in chosen:
            if name not in types:
                listed = ", ".join(repr(n) for n in schema.names[:20])
                raise SourceError(f"{url} has no column {name!r} (its columns: {listed})")
            if not _is_numeric(types[name]):
                raise SourceError(
                    f"{url}: column {name!r} holds {types[name]}, not numbers: it cannot be a "
                    "feature"
                )
        if len(set(chosen)) != len(chosen):
            raise SourceError(f"{url}: a feature column is asked for twice")
    all_float32 = all(types[name] == pa.float32() for name in chosen)
    return SourceTable(
        protocol=protocol,
        options=options,
        format="parquet",
        files=tuple(files),
        columns=tuple(chosen),
        dtype="float32" if all_float32 else "float64",
        n_rows=sum(f.rows for f in files),
    )


def _inspect_npy(
    fs: Any, protocol: str, path: str, url: str, options: dict[str, Any], info: dict[str, Any]
) -> SourceTable:
    with _reading(url, options, "read as NPY"), _open_npy(fs, path) as f:
        shape, dtype, _ = _npy_header(f, url)
    return SourceTable(
        protocol=protocol,
        options=options,
        format="npy",
        files=(SourceFile(url, shape[0], int(info.get("size") or 0), _version(info)),),
        columns=tuple(f"x{j}" for j in range(shape[1])),
        dtype=_float_dtype(dtype),
        n_rows=shape[0],
    )


def _inspect_zarr(
    fs: Any, protocol: str, path: str, url: str, options: dict[str, Any]
) -> SourceTable:
    with _reading(url, options, "read as a Zarr array"):
        version = _zarr_version(fs, path)
        if version is None:
            raise SourceError(f"{url} is not a Zarr array (no zarr.json or .zarray)")
        array = _zarr_array(url, options)
        dtype = np.dtype(array.dtype)
        if len(array.shape) != 2:
            raise SourceError(
                f"{url}: a Zarr array of {len(array.shape)} dimensions; a table is 2-D "
                "(rows x columns)"
            )
        if dtype.kind != "f":
            raise SourceError(f"{url}: a Zarr array of {dtype}; a table read in place is float")
    rows, d = (int(s) for s in array.shape)
    return SourceTable(
        protocol=protocol,
        options=options,
        format="zarr",
        files=(SourceFile(url, rows, 0, version),),
        columns=tuple(f"x{j}" for j in range(d)),
        dtype=_float_dtype(dtype),
        n_rows=rows,
    )


# -- reading (module level: what a Dask task calls) -------------------------------------------


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
    fs = _filesystem(protocol, options)
    multi = len(files) > 1 or first > 0
    offset = first
    for file in files:
        lo, hi = max(start, offset), min(stop, offset + file.rows)
        if lo < hi:
            dest = out[lo - start : hi - start]
            a, b = lo - offset, hi - offset
            if format == "parquet":
                for table, local in _parquet_pieces(fs, options, file, columns, a, b):
                    part = dest[local - a : local - a + table.num_rows]
                    _fill(table, columns, part, file.url, offset + local, local, multi)
            elif format == "npy":
                _read_npy(fs, protocol, options, file, len(columns), a, b, dest)
            elif format == "zarr":
                _read_zarr(fs, protocol, options, file, len(columns), a, b, dest)
            else:
                raise SourceError(f"{file.url}: {format!r} is not a format read in place")
            if format != "parquet":
                _require_finite(dest, columns, file.url, lo, a, multi)
        offset += file.rows
    return out


def _parquet_pieces(
    fs: Any,
    options: dict[str, Any],
    file: SourceFile,
    columns: Sequence[str],
    a: int,
    b: int,
    *,
    strings: bool = False,
) -> Iterator[tuple[Any, int]]:
    """The Arrow tables of the file's rows [a, b) (a row group at a time, only those that
    overlap, only ``columns``), each with the file row it starts at."""
    protocol = file.url.split("://", 1)[0]
    with _reading(file.url, options), _open_checked(fs, protocol, file) as f:
        parquet = _parquet_file(f, file)
        if strings:
            names = parquet.schema_arrow.names
            for name in columns:
                if name not in names:
                    raise SourceError(f"{file.url} has no column {name!r}")
        metadata = parquet.metadata
        row0 = 0
        for group in range(metadata.num_row_groups):
            n = int(metadata.row_group(group).num_rows)
            lo, hi = max(a, row0), min(b, row0 + n)
            if lo < hi:
                table = parquet.read_row_group(group, columns=list(columns))
                yield table.slice(lo - row0, hi - lo), lo
            row0 += n
            if row0 >= b:
                break


def _parquet_open(f: Any) -> Any:
    import pyarrow.parquet as pq

    # pre_buffer would read every row group's column chunks ahead; one at a time is wanted.
    return pq.ParquetFile(f, pre_buffer=False)


def _parquet_file(f: Any, file: SourceFile) -> Any:
    parquet = _parquet_open(f)
    if int(parquet.metadata.num_rows) != file.rows:
        raise _changed(file.url)
    return parquet


def _fill(
    table: Any,
    columns: Sequence[str],
    out: np.ndarray,
    url: str,
    first: int,
    local: int,
    multi: bool,
) -> None:
    """``table``'s columns (an Arrow table or record batch) into ``out``; a null or a value that
    is not a finite number is refused naming its row (table row ``first`` is the first)."""
    for j, name in enumerate(columns):
        column = table.column(name)
        if column.null_count:
            nulls = np.asarray(column.is_null().to_numpy(zero_copy_only=False))
            row = int(np.flatnonzero(nulls)[0])
            raise SourceError(
                f"{_at(url, first + row, local + row, multi)}, column {name!r} is empty (null): "
                "every feature must be a number"
            )
        out[:, j] = column.to_numpy(zero_copy_only=False)  # (booleans are bits)
    _require_finite(out, columns, url, first, local, multi)


def _require_finite(
    out: np.ndarray, columns: Sequence[str], url: str, first: int, local: int, multi: bool
) -> None:
    finite = np.isfinite(out)
    if not finite.all():
        row, j = (int(i) for i in np.argwhere(~finite)[0])
        value = "NaN" if np.isnan(out[row, j]) else str(out[row, j])
        raise SourceError(
            f"{_at(url, first + row, local + row, multi)}, column {columns[j]!r} is {value}: "
            "every feature must be a finite number"
        )


def _at(url: str, row: int, local: int, multi: bool) -> str:
    where = f" (row {local} of this file)" if multi and local != row else ""
    return f"{url}: row {row}{where}"


def _open_npy(fs: Any, path: str) -> Any:
    # Small read-ahead: the header in one request, a row range in one more (not 50 MiB more).
    return fs.open(path, "rb", block_size=_NPY_BLOCK, cache_type="readahead")


def _npy_header(f: Any, url: str) -> tuple[tuple[int, int], np.dtype, int]:
    """The shape, dtype and data offset of the NPY file open at its start."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise SourceError(f"{url}: NPY format version {version} is not read in place")
    except SourceError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise SourceError(f"{url} is not an NPY file ({_short(str(exc))})") from None
    dtype = np.dtype(dtype)
    if len(shape) != 2:
        raise SourceError(
            f"{url}: an array of {len(shape)} dimensions; a table is 2-D (rows x columns)"
        )
    if fortran:
        raise SourceError(
            f"{url} is in Fortran (column) order; rows are read in place from C order only "
            "(save it with np.ascontiguousarray)"
        )
    if dtype.kind not in "fiub" or dtype.hasobject or dtype.fields:
        raise SourceError(f"{url}: an array of {dtype}; a table read in place holds numbers")
    return (int(shape[0]), int(shape[1])), dtype, int(f.tell())


def _read_npy(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    d: int,
    a: int,
    b: int,
    out: np.ndarray,
) -> None:
    with _reading(file.url, options), _open_checked(fs, protocol, file, npy=True) as f:
        (rows, columns), dtype, offset = _npy_header(f, file.url)
        if rows != file.rows or columns != d:
            raise _changed(file.url)
        row_bytes = d * dtype.itemsize
        f.seek(offset + a * row_bytes)
        data = f.read((b - a) * row_bytes)
        if len(data) != (b - a) * row_bytes:
            raise SourceError(f"{file.url} is shorter than its header says (truncated)")
        out[...] = np.frombuffer(data, dtype=dtype).reshape(b - a, d)


def _zarr_array(url: str, options: dict[str, Any]) -> Any:
    import zarr
    import zarr.storage

    # An asynchronous filesystem on zarr's own event loop (a synchronous one, "file", is
    # wrapped), as `FsspecStore.from_url` makes it: see `app/store/array_store._connect`.
    # Options are for remote stores: the local filesystem is the plain one (as `_filesystem`).
    storage = {} if url.startswith("file://") else dict(options)
    store = zarr.storage.FsspecStore.from_url(url, storage_options=storage, read_only=True)
    return zarr.open_array(store=store, mode="r")


def _zarr_version(fs: Any, path: str) -> str | None:
    """A hash of the array's metadata document (None when there is none)."""
    for name in _ZARR_METADATA:
        document = f"{path.rstrip('/')}/{name}"
        fs.invalidate_cache(document)
        try:
            data = fs.cat_file(document)
        except FileNotFoundError:
            continue
        return hashlib.blake2b(bytes(data), digest_size=16).hexdigest()
    return None


def _read_zarr(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    d: int,
    a: int,
    b: int,
    out: np.ndarray,
) -> None:
    with _reading(file.url, options):
        if _zarr_version(fs, _path_of(file.url, protocol)) != file.version:
            raise _changed(file.url)
        array = _zarr_array(file.url, options)
        if tuple(array.shape) != (file.rows, d):
            raise _changed(file.url)
        out[...] = np.asarray(array[a:b])


def _rechunk(pieces: Iterator[np.ndarray], rows: int) -> Iterator[np.ndarray]:
    """``pieces`` regrouped into blocks of exactly ``rows`` rows (the last: what is left)."""
    pending: list[np.ndarray] = []
    held = 0
    for piece in pieces:
        if piece.shape[0] == 0:
            continue
        pending.append(piece)
        held += piece.shape[0]
        if held >= rows:
            joined = pending[0] if len(pending) == 1 else np.concatenate(pending)
            cut = 0
            while held - cut >= rows:
                yield np.ascontiguousarray(joined[cut : cut + rows])
                cut += rows
            pending = [joined[cut:]] if cut < held else []
            held -= cut
    if held:
        yield pending[0] if len(pending) == 1 else np.concatenate(pending)


# -- the filesystem ---------------------------------------------------------------------------


def _filesystem(protocol: str, options: Mapping[str, Any]) -> Any:
    import fsspec

    try:
        if protocol == "file":
            from fsspec.implementations.local import LocalFileSystem

            return LocalFileSystem()
        return fsspec.filesystem(protocol, **options)
    except Exception as exc:
        raise SourceError(
            f"the {protocol!r} filesystem cannot be opened: {_describe(exc, options)}"
        ) from None


def _normal_path(fs: Any, path: str) -> str:
    stripped = str(type(fs)._strip_protocol(path))
    return stripped.rstrip("/") or stripped


def _path_of(url: str, protocol: str) -> str:
    prefix = f"{protocol}://"
    return url[len(prefix) :] if url.startswith(prefix) else url


def _version(info: Mapping[str, Any]) -> str:
    """An object's version as fsspec reports it: S3's ETag, else its modification time."""
    for key in ("ETag", "etag", "mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is not None and value != "":
            return str(value)
    return ""


@contextmanager
def _open_checked(fs: Any, protocol: str, file: SourceFile, *, npy: bool = False) -> Iterator[Any]:
    """The file open for reading, once its version is the recorded one (S3: from the request
    that opens it; else one `info`)."""
    path = _path_of(file.url, protocol)
    fs.invalidate_cache(path)
    # no read-ahead: Arrow reads exactly the footer and the column chunks it needs
    f = _open_npy(fs, path) if npy else fs.open(path, "rb", cache_type="none")
    try:
        details = getattr(f, "details", None)
        now = _version(details if isinstance(details, Mapping) else fs.info(path))
        if now != file.version:
            raise _changed(file.url)
        yield f
    finally:
        f.close()


def _changed(url: str) -> SourceError:
    return SourceError(
        f"{url} changed since it was read (its version is not the one recorded); import it "
        "again to read it as it is now"
    )


@contextmanager
def _reading(
    url: str, options: Mapping[str, Any], what: str = "read", *, missing_passes: bool = False
) -> Iterator[None]:
    """Any failure inside as a SourceError naming ``url`` (and no option value)."""
    try:
        yield
    except (SourceError, MemoryError):
        raise
    except FileNotFoundError:
        if missing_passes:
            raise
        raise SourceError(f"{url}: no such file or object (missing, or removed)") from None
    except Exception as exc:
        if type(exc).__name__ == "FileExpired":  # s3fs: the object changed while being read
            raise _changed(url) from None
        raise SourceError(f"{url} cannot be {what}: {_describe(exc, options)}") from None


def _describe(exc: BaseException, options: Mapping[str, Any]) -> str:
    text = str(exc) or type(exc).__name__
    for value in _option_texts(options):
        text = text.replace(value, "***")
    return _short(text)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def _option_texts(options: Any) -> list[str]:
    """Every text in the options (longest first), to take out of messages."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str | bytes):
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            if len(text) >= 4:
                found.append(text)
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item)

    walk(options)
    return sorted(set(found), key=len, reverse=True)


def _float_dtype(dtype: np.dtype) -> str:
    return "float32" if dtype == np.float32 else "float64"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)
