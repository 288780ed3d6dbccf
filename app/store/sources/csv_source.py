"""A CSV read in place: one file, or a directory of files sharing one header, read by row range.

A CSV has no metadata saying how many rows it holds or where a row starts, so inspecting one
reads it once, at disk speed, without parsing values: it counts its records (newlines outside
quotes; blank lines are not records, as for an upload) and keeps a *mark* (row, byte offset)
about every `MARK_BYTES`. A row range is then read from the mark before its first row to the
mark after its last: one byte range, parsed by Arrow. Only uncompressed text can be read from
an offset, so a compressed CSV is refused with what to do instead.

Which columns are features is decided as for an upload: those whose sampled cells are numbers.
Values are parsed as float64 (the text's own precision); a cell that is not a number, a missing
one or a ragged row is refused naming the object, the row and the column."""

from __future__ import annotations

import csv
import io
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.store.sources.filesystems import (
    changed,
    listed_files,
    open_checked,
    reading,
    short,
    unchanged,
    version,
)
from app.store.sources.source_types import CsvLayout, Layout, SourceError, SourceFile
from app.store.sources.values import at, require_finite

CSV_SUFFIXES = (".csv", ".tsv", ".txt")
COMPRESSED_CSV_SUFFIXES = (".csv.gz", ".tsv.gz", ".csv.bz2", ".csv.zst", ".csv.xz", ".tsv.zst")
SCAN_BYTES = 8 << 20  # read at a time while counting records
MARK_BYTES = 4 << 20  # a row range is read from at most this far before its first row
PARSE_BYTES = 16 << 20  # Arrow parses this much at a time (a row must fit in it)
SAMPLE_BYTES = 1 << 20  # the start of the first file, for the header and the column types
SAMPLE_ROWS = 1000
FILE_SCANS = 4  # files of a directory counted at once (S3: requests in flight)
NEWLINE, QUOTE, CR = 10, 34, 13


def is_csv(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(CSV_SUFFIXES) and not name.startswith(("_", "."))


def is_compressed_csv(path: str) -> bool:
    return path.lower().endswith(COMPRESSED_CSV_SUFFIXES)


def compressed_refusal(url: str) -> SourceError:
    return SourceError(
        f"{url} is compressed: a compressed CSV cannot be read from a row's offset in place; "
        "decompress it beside the original, convert it to Parquet, or upload it"
    )


def delimiter_of(path: str) -> str:
    return "\t" if path.lower().endswith(".tsv") else ","


# -- inspecting -------------------------------------------------------------------------------


def inspect_csv(
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
    """The files counted (a file of ``known``, a sync's earlier record, that the listing shows
    unchanged keeps its count and marks: a sync reads only what changed)."""
    if not is_dir and is_compressed_csv(path):
        raise compressed_refusal(url)
    entries = listed_files(fs, path, info, is_dir, is_csv)
    if not entries:
        if listed_files(fs, path, info, is_dir, is_compressed_csv):
            raise compressed_refusal(url)
        raise SourceError(f"{url} holds no *.csv or *.tsv files")
    delimiters = {delimiter_of(p) for p, _ in entries}
    if len(delimiters) > 1:
        raise SourceError(f"{url} holds both .csv and .tsv files: one table has one delimiter")
    delimiter = delimiters.pop()
    first_path = entries[0][0]
    header, sample = _header_and_sample(fs, protocol, first_path, options, delimiter)
    chosen = _feature_columns(f"{protocol}://{first_path}", header, sample, columns)

    def scan(entry: tuple[str, Any]) -> SourceFile:
        file_path, file_info = entry
        file_url = f"{protocol}://{file_path}"
        same = unchanged(known, file_url, file_info)
        if same is not None and same.csv is not None and same.csv.header == header:
            return same
        with reading(file_url, options, "read as CSV"):
            fs.invalidate_cache(file_path)
            details = fs.info(file_path)
            with fs.open(file_path, "rb", cache_type="none", block_size=SCAN_BYTES) as f:
                found_header, rows, marks = count_records(f, file_url, delimiter)
        if found_header != header:
            raise SourceError(
                f"{file_url} has another header than {protocol}://{first_path} (the files of "
                "one table must share their columns)"
            )
        layout = CsvLayout(header=header, delimiter=delimiter, marks=marks)
        size = int(details.get("size") or file_info.get("size") or 0)
        return SourceFile(file_url, rows, size, version(details), csv=layout)

    with ThreadPoolExecutor(min(FILE_SCANS, len(entries))) as pool:
        files = tuple(pool.map(scan, entries))
    return Layout(files=files, columns=tuple(chosen), dtype="float64")


def _header_and_sample(
    fs: Any, protocol: str, path: str, options: dict[str, Any], delimiter: str
) -> tuple[tuple[str, ...], list[list[str]]]:
    url = f"{protocol}://{path}"
    with reading(url, options, "read as CSV"), fs.open(path, "rb", cache_type="none") as f:
        head = f.read(SAMPLE_BYTES)
    complete = head if len(head) < SAMPLE_BYTES else head[: head.rfind(b"\n") + 1]
    try:
        text = complete.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{url} is not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if _filled(row)]
    except csv.Error as exc:
        raise SourceError(f"{url} is not valid CSV: {exc}") from None
    if not rows:
        raise SourceError(f"{url} is empty: expected a header row, then one row per item")
    try:
        header = tuple(header_names(rows[0]))
    except ValueError as exc:
        raise SourceError(f"{url}: {exc}") from None
    sample = rows[1 : 1 + SAMPLE_ROWS]
    for number, row in enumerate(sample):
        if len(row) != len(header):
            raise SourceError(_ragged(at(url, number, number, False), len(row), len(header)))
    return header, sample


def _feature_columns(
    url: str, header: tuple[str, ...], sample: list[list[str]], columns: list[str] | None
) -> list[str]:
    """The columns asked for (each must hold numbers), or every column whose sampled cells are
    numbers (a column mixing numbers and text is refused at its first text cell)."""
    numeric: dict[str, bool] = {}
    for j, name in enumerate(header):
        cells = [row[j] for row in sample]
        numbers = [is_number(cell) for cell in cells]
        if any(numbers):
            bad = next((r for r, ok in enumerate(numbers) if not ok), None)
            if bad is not None and (columns is None or name in columns):
                raise SourceError(_bad_cell(at(url, bad, bad, False), cells[bad], name))
        numeric[name] = any(numbers) or not cells
    if columns is None:
        chosen = [name for name in header if numeric[name]]
        if not chosen:
            raise SourceError(f"{url} has no numeric columns to read as features")
        return chosen
    if not columns:
        raise SourceError(f"{url}: no feature columns were asked for")
    for name in columns:
        if name not in numeric:
            listed = ", ".join(repr(n) for n in header[:20])
            raise SourceError(f"{url} has no column {name!r} (its columns: {listed})")
        if not numeric[name]:
            raise SourceError(
                f"{url}: column {name!r} holds text, not numbers: it cannot be a feature"
            )
    if len(set(columns)) != len(columns):
        raise SourceError(f"{url}: a feature column is asked for twice")
    return list(columns)


def header_names(cells: list[str]) -> list[str]:
    """A CSV header's column names, stripped; ValueError when one is empty or repeated (an
    upload and an import by reference refuse the same headers)."""
    names = [cell.strip() for cell in cells]
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if not name:
            raise ValueError(f"column {position} of the header has no name")
        if name in seen:
            raise ValueError(
                f"column name {name!r} appears twice in the header (columns {seen[name]} "
                f"and {position})"
            )
        seen[name] = position
    return names


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return "_" not in cell  # float() accepts "1_000"; it is not a number in a table


def _filled(row: list[str]) -> bool:
    return bool(row) and any(cell.strip() for cell in row)


@dataclass
class _Count:
    """The state of a record count carried from one block of bytes to the next."""

    in_quotes: bool = False
    line_start: int = 0  # the offset of the line being read
    previous_byte: int = -1  # the byte before the block (-1 at the start)
    records: int = 0  # filled lines ended so far, the header's included
    header_end: int = -1  # the offset just after the header's line


def count_records(
    f: Any, url: str, delimiter: str
) -> tuple[tuple[str, ...], int, tuple[tuple[int, int], ...]]:
    """The header, the number of records after it and the marks (row, offset of that row's
    line) of the file open at its start. A newline inside quotes ends no record (quotes are
    counted: a doubled quote inside a field turns twice); a blank line is no record."""
    state = _Count()
    marks: list[tuple[int, int]] = []
    next_mark = 0
    pos = 0
    while block := f.read(SCAN_BYTES):
        if pos == 0 and block.startswith(b"\xef\xbb\xbf"):  # a spreadsheet's byte-order mark
            state.line_start = 3
        filled = _filled_line_ends(block, pos, _record_ends(block, state), state)
        if len(filled):
            if state.header_end < 0:
                state.header_end = int(filled[0]) + 1
                marks.append((0, state.header_end))
                next_mark = state.header_end + MARK_BYTES
            # The first filled line ending at or past each threshold: its next line is a mark.
            while (i := int(np.searchsorted(filled + 1, next_mark))) < len(filled):
                offset = int(filled[i]) + 1
                marks.append((state.records + i, offset))  # rows before it, the header not one
                next_mark = offset + MARK_BYTES
            state.records += len(filled)
        state.previous_byte = block[-1]
        pos += len(block)
    if state.in_quotes:
        raise SourceError(f"{url}: a quoted field is never closed (the file ends inside quotes)")
    tail = pos - state.line_start
    if tail > 1 or (tail == 1 and state.previous_byte != CR):  # a last line with no newline
        state.records += 1
        if state.header_end < 0:
            state.header_end = pos
            marks.append((0, pos))
    if state.header_end < 0:
        raise SourceError(f"{url} is empty: expected a header row, then one row per item")
    return _parse_header(f, url, delimiter, state.header_end), state.records - 1, tuple(marks)


def _record_ends(block: bytes, state: _Count) -> np.ndarray:
    """Offsets in ``block`` of the newlines that end a record (not inside quotes)."""
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == NEWLINE)
    if b'"' in block:
        quotes = np.flatnonzero(data == QUOTE)
        before = np.searchsorted(quotes, ends) + int(state.in_quotes)
        ends = ends[before % 2 == 0]
        state.in_quotes = bool((int(state.in_quotes) + len(quotes)) % 2)
    return ends


def _filled_line_ends(block: bytes, pos: int, ends: np.ndarray, state: _Count) -> np.ndarray:
    """The file offsets of the newlines (``ends``, offsets in the block at ``pos``) that end a
    filled line: one holding more than nothing or a lone carriage return."""
    if len(ends) == 0:
        return ends.astype(np.int64)
    absolute = ends.astype(np.int64) + pos
    starts = np.empty_like(absolute)
    starts[0] = state.line_start
    starts[1:] = absolute[:-1] + 1
    lengths = absolute - starts
    data = np.frombuffer(block, dtype=np.uint8)
    before_end = np.where(ends > 0, data[np.maximum(ends - 1, 0)], state.previous_byte)
    state.line_start = int(absolute[-1]) + 1
    return absolute[(lengths > 1) | ((lengths == 1) & (before_end != CR))]


def _parse_header(f: Any, url: str, delimiter: str, header_end: int) -> tuple[str, ...]:
    f.seek(0)
    raw = f.read(header_end)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{url} is not UTF-8 text (bad byte at offset {exc.start})") from None
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if _filled(row)]
    return tuple(cell.strip() for cell in rows[0]) if rows else ()


# -- reading ----------------------------------------------------------------------------------


def _byte_range(file: SourceFile, a: int, b: int) -> tuple[int, int, int]:
    """(first byte, byte after, row at the first byte) covering the file's rows [a, b)."""
    layout = _layout(file)
    rows = [row for row, _ in layout.marks]
    i = max(0, bisect_right(rows, a) - 1)
    j = bisect_left(rows, b, lo=i + 1)
    end = layout.marks[j][1] if j < len(layout.marks) else file.size
    return layout.marks[i][1], end, layout.marks[i][0]


def _layout(file: SourceFile) -> CsvLayout:
    if file.csv is None:
        raise SourceError(f"{file.url}: no row index was recorded for this CSV; sync it")
    return file.csv


def _parse(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    columns: Sequence[str],
    kind: str,
    a: int,
    b: int,
    offset: int = 0,
    multi: bool = False,
) -> Any:
    """The file's rows [a, b) of ``columns`` as an Arrow table of ``kind`` ("double" or
    "string"; a missing number is null), parsed from the one byte range that holds them."""
    import pyarrow as pa

    layout = _layout(file)
    first, end, row = _byte_range(file, a, b)
    with reading(file.url, options), open_checked(fs, protocol, file) as f:
        f.seek(first)
        data = f.read(end - first)
    if len(data) != end - first:
        raise changed(file.url)
    try:
        try:
            table = _arrow_table(data, layout, columns, kind)
        except pa.ArrowInvalid:
            if kind != "double":
                raise
            # A cell that is not a number may lie outside the rows asked for (the range read
            # starts and ends at marks): read it as text, keep the rows, then convert.
            table = _numbers(_arrow_table(data, layout, columns, "string").slice(a - row, b - a))
            row = a
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        where = (offset, multi)
        raise _locate(data, file, layout, columns, row, (a, b), where, str(exc)) from None
    if table.num_rows < b - row:
        raise changed(file.url)
    return table.slice(a - row, b - a)


def _arrow_table(data: bytes, layout: CsvLayout, columns: Sequence[str], kind: str) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    names = [f"c{i}" for i in range(len(layout.header))]  # Arrow's: unique whatever the header
    wanted = [names[layout.header.index(c)] for c in columns]
    to = pa.float64() if kind == "double" else pa.string()
    return pa_csv.read_csv(
        io.BytesIO(data),
        read_options=pa_csv.ReadOptions(column_names=names, block_size=PARSE_BYTES),
        # A quoted field may hold a newline; Arrow's faster chunker assumes none can.
        parse_options=pa_csv.ParseOptions(
            delimiter=layout.delimiter, newlines_in_values=b'"' in data
        ),
        convert_options=pa_csv.ConvertOptions(
            column_types={n: to for n in wanted},
            include_columns=wanted,
            null_values=[""] if kind == "double" else [],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


def _numbers(table: Any) -> Any:
    """Text columns as float64, an empty cell null (as the CSV reader makes it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    converted = []
    for column in table.columns:
        blank = pc.equal(column, "")
        converted.append(pc.if_else(blank, pa.scalar(None, pa.string()), column).cast(pa.float64()))
    return pa.table(converted, names=table.column_names)


def read_csv(
    fs: Any,
    protocol: str,
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
    table = _parse(fs, protocol, options, file, columns, "double", a, b, offset, multi)
    for j in range(len(columns)):
        column = table.column(j)
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise SourceError(
                f"{at(file.url, offset + a + row, a + row, multi)}, column {columns[j]!r} is "
                "missing: every feature must be a number"
            )
        dest[:, j] = column.to_numpy()
    require_finite(dest, columns, file.url, offset + a, a, multi)


def csv_strings(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    files: Sequence[SourceFile],
    first: int,
    column: str,
    start: int,
    stop: int,
) -> list[str]:
    """A column's cells as text for table rows [start, stop) of ``files`` (from row ``first``)."""
    found: list[str] = []
    offset = first
    for file in files:
        layout = _layout(file)
        if column not in layout.header:
            listed = ", ".join(repr(n) for n in layout.header[:20])
            raise SourceError(f"{file.url} has no column {column!r} (its columns: {listed})")
        lo, hi = max(start, offset), min(stop, offset + file.rows)
        if lo < hi:
            a, b = lo - offset, hi - offset
            multi = len(files) > 1 or first > 0
            table = _parse(fs, protocol, options, file, [column], "string", a, b, offset, multi)
            found.extend(table.column(0).to_pylist())
        offset += file.rows
    return found


def _locate(
    data: bytes,
    file: SourceFile,
    layout: CsvLayout,
    columns: Sequence[str],
    row: int,
    window: tuple[int, int],
    where: tuple[int, bool],
    arrow_message: str,
) -> SourceError:
    """Arrow's refusal, with the row and column it does not name: the range read again, row by
    row (``row`` is the file's row at its first byte). A ragged row is named wherever it is
    (the rows after it cannot be told apart); a bad cell only among the rows asked for."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SourceError(f"{file.url} is not UTF-8 text (bad byte near offset {exc.start})")
    first, multi = where

    def place(number: int) -> str:  # the table's row, and the file's own in a folder of files
        return at(file.url, first + number, number, multi)

    positions = [layout.header.index(c) for c in columns]
    reader = csv.reader(io.StringIO(text), delimiter=layout.delimiter)
    for number, cells in enumerate((r for r in reader if r), start=row):
        if len(cells) != len(layout.header):
            return SourceError(_ragged(place(number), len(cells), len(layout.header)))
        for j in positions:
            if window[0] <= number < window[1] and not is_number(cells[j]):
                return SourceError(_bad_cell(place(number), cells[j], layout.header[j]))
    return SourceError(f"{file.url} cannot be read as CSV: {short(arrow_message)}")


def _ragged(where: str, fields: int, width: int) -> str:
    return (
        f"{where} has {fields} fields but the header has {width}; every row needs one "
        "value per column"
    )


def _bad_cell(where: str, cell: str, column: str) -> str:
    if cell.strip() == "":
        return f"{where}, column {column!r} is missing: every feature must be a number"
    return f"{where}, column {column!r} is {cell.strip()[:40]!r}, not a number"
