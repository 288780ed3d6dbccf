"""A Parquet table read in place: one file, or a dataset (a directory) of files sharing one
schema, read a row group at a time and only the row groups (and columns) a row range overlaps.

Inspecting reads each file's footer only; a file whose row count differs from the recorded one
is refused as changed. Pyarrow is imported on use, not with the module."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from app.store.sources.filesystems import (
    changed,
    filesystem,
    listed_files,
    open_checked,
    reading,
    unchanged,
    version,
)
from app.store.sources.source_types import Layout, SourceError, SourceFile
from app.store.sources.values import at, require_finite

PARQUET_SUFFIXES = (".parquet", ".pq")


def is_parquet(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.lower().endswith(PARQUET_SUFFIXES) and not name.startswith(("_", "."))


def _is_numeric(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    )


# -- inspecting -------------------------------------------------------------------------------


FOOTER_READS = 16


def inspect_parquet(
    fs: Any,
    protocol: str,
    path: str,
    url: str,
    options: dict[str, Any],
    info: dict[str, Any],
    is_dir: bool,
    columns: list[str] | None,
    known: Mapping[str, SourceFile] | None = None,
) -> Layout:
    """The dataset's files from their footers; a file of ``known`` (a sync's earlier record)
    whose version and size the listing shows unchanged keeps its rows without a request (its
    schema was checked when it was recorded), but for the first, whose schema gives the types."""
    import pyarrow as pa

    entries = listed_files(fs, path, info, is_dir, is_parquet)
    if not entries:
        raise SourceError(f"{url} holds no *.parquet files")
    files: list[SourceFile] = []
    schema: Any = None

    listed_entries = dict(entries)
    sizes = {file_path: entry.get("size") for file_path, entry in entries}

    def footer(file_path: str) -> tuple[Any, int]:
        same = unchanged(known, f"{protocol}://{file_path}", listed_entries[file_path])
        if same is not None and file_path != entries[0][0]:
            return None, same.rows
        with reading(f"{protocol}://{file_path}", options, "read as Parquet"):
            size = sizes[file_path]
            tail = footer_tail(fs, file_path, size)
            if tail is not None:
                parquet = parquet_open(pa.BufferReader(tail))
                return parquet.schema_arrow, int(parquet.metadata.num_rows)
            # The listing's size spares the request that would ask for it again.
            with fs.open(file_path, "rb", cache_type="none", size=size) as f:
                parquet = parquet_open(f)
                return parquet.schema_arrow, int(parquet.metadata.num_rows)

    # The footers are read FOOTER_READS at a time: a dataset of 100 objects on S3 is a round
    # trip or two per object, and registering it should take about a second, not 100 trips.
    with ThreadPoolExecutor(min(FOOTER_READS, len(entries))) as pool:
        footers = list(pool.map(footer, [file_path for file_path, _ in entries]))
    for (file_path, entry), (file_schema, rows) in zip(entries, footers, strict=True):
        file_url = f"{protocol}://{file_path}"
        if schema is None:
            schema = file_schema
        elif file_schema is not None and not file_schema.equals(schema):
            raise SourceError(
                f"{file_url} has other columns than {files[0].url} (a Parquet dataset's files "
                "must share one schema)"
            )
        files.append(SourceFile(file_url, rows, int(entry.get("size") or 0), version(entry)))
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
    return Layout(
        files=tuple(files),
        columns=tuple(chosen),
        dtype="float32" if all_float32 else "float64",
    )


# -- reading ----------------------------------------------------------------------------------


def read_parquet(
    fs: Any,
    options: dict[str, Any],
    file: SourceFile,
    columns: Sequence[str],
    a: int,
    b: int,
    dest: np.ndarray,
    offset: int,
    multi: bool,
) -> None:
    """The file's rows [a, b) into ``dest``; the file starts at table row ``offset``."""
    for table, local in parquet_pieces(fs, options, file, columns, a, b):
        part = dest[local - a : local - a + table.num_rows]
        fill(table, columns, part, file.url, offset + local, local, multi)


def parquet_strings(
    protocol: str,
    options: dict[str, Any],
    files: Sequence[SourceFile],
    first: int,
    column: str,
    start: int,
    stop: int,
) -> list[str]:
    """A column's values as text ("" for a null) for table rows [start, stop), from ``files``
    (those overlapping the rows, in order) that begin at table row ``first``."""
    fs = filesystem(protocol, options)
    values: list[str] = []
    offset = first
    for file in files:
        lo, hi = max(start, offset), min(stop, offset + file.rows)
        if lo < hi:
            for table, _ in parquet_pieces(
                fs, options, file, [column], lo - offset, hi - offset, strings=True
            ):
                values.extend(_text(v) for v in table.column(column).to_pylist())
        offset += file.rows
    return values


def parquet_blocks(
    protocol: str,
    options: dict[str, Any],
    files: Sequence[SourceFile],
    columns: Sequence[str],
    dtype: str,
    rows: int,
) -> Iterator[np.ndarray]:
    """The whole table in order, in blocks of exactly ``rows`` rows (the last: what is left)."""
    return _rechunk(_parquet_batches(protocol, options, files, columns, dtype, rows), rows)


def _parquet_batches(
    protocol: str,
    options: dict[str, Any],
    files: Sequence[SourceFile],
    columns: Sequence[str],
    dtype: str,
    rows: int,
) -> Iterator[np.ndarray]:
    """Every row, in order, in record batches of at most ``rows`` rows, each file opened
    once and each row group read once."""
    fs = filesystem(protocol, options)
    multi = len(files) > 1
    offset = 0
    for file in files:
        with reading(file.url, options), open_checked(fs, protocol, file) as f:
            parquet = parquet_file(f, file)
            local = 0
            for batch in parquet.iter_batches(batch_size=rows, columns=list(columns)):
                out = np.empty((batch.num_rows, len(columns)), dtype=dtype)
                fill(batch, columns, out, file.url, offset + local, local, multi)
                local += batch.num_rows
                yield out
            if local != file.rows:
                raise changed(file.url)
        offset += file.rows


def parquet_pieces(
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
    with reading(file.url, options), open_checked(fs, protocol, file) as f:
        parquet = parquet_file(f, file)
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


FOOTER_TAIL_BYTES = 64 * 1024


def footer_tail(fs: Any, path: str, size: int | None) -> bytes | None:
    """The file's last FOOTER_TAIL_BYTES in one request when they hold its whole footer (its
    metadata is then read from them: one round trip, where opening the file costs two or
    three); None otherwise (no size listed, or a footer larger than that)."""
    if not size or size < 12:
        return None
    tail = bytes(fs.cat_file(path, start=max(0, size - FOOTER_TAIL_BYTES), end=size))
    if len(tail) < 12 or tail[-4:] != b"PAR1":
        return None
    length = int.from_bytes(tail[-8:-4], "little")
    return tail if length + 8 <= len(tail) else None


def parquet_open(f: Any) -> Any:
    import pyarrow.parquet as pq

    # pre_buffer would read every row group's column chunks ahead; one at a time is wanted.
    return pq.ParquetFile(f, pre_buffer=False)


def parquet_file(f: Any, file: SourceFile) -> Any:
    parquet = parquet_open(f)
    if int(parquet.metadata.num_rows) != file.rows:
        raise changed(file.url)
    return parquet


def fill(
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
                f"{at(url, first + row, local + row, multi)}, column {name!r} is empty (null): "
                "every feature must be a number"
            )
        out[:, j] = column.to_numpy(zero_copy_only=False)  # (booleans are bits)
    require_finite(out, columns, url, first, local, multi)


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


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)
