"""CSV with a header row. Numeric columns become features; the id and ground-truth columns
are read as text; other all-text columns are ignored and reported.

Two passes over the (spooled) file: the csv module checks the shape and reads the text
columns, then numpy's C parser reads the numeric columns. A failure in the fast pass is
located by a slow pass, so the message can name the row and column.
"""

import csv
import io
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from app.services.errors import InvalidInput
from app.services.ingest.checks import (
    encode_classes,
    require_computable,
    require_finite,
    require_nonempty_shape,
    require_unique_ids,
)
from app.services.ingest.parsed import ParsedTable

SAMPLE_ROWS = 1000  # rows used to tell numeric columns from text columns


def parse_csv(
    stream: BinaryIO, *, id_column: str | None = None, ground_truth_column: str | None = None
) -> ParsedTable:
    try:
        return _parse(stream, id_column=id_column, ground_truth_column=ground_truth_column)
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"the file is not UTF-8 text (bad byte at offset {exc.start}); "
            "upload a CSV in UTF-8, an NPY array, or a PNG/JPEG image"
        ) from None
    except csv.Error as exc:
        raise InvalidInput(f"the file is not valid CSV: {exc}") from None


def _parse(
    stream: BinaryIO, *, id_column: str | None, ground_truth_column: str | None
) -> ParsedTable:
    header = _read_header(stream)
    id_index = _column_index(header, id_column, "id_column")
    truth_index = _column_index(header, ground_truth_column, "ground_truth_column")
    if id_index is not None and id_index == truth_index:
        raise InvalidInput("id_column and ground_truth_column must be different columns")

    text_indices = [i for i in (id_index, truth_index) if i is not None]
    n_rows, sample, text_values = _scan_rows(stream, header, text_indices)
    feature_indices, ignored = _classify_columns(header, sample, set(text_indices))
    require_nonempty_shape(n_rows, len(feature_indices))

    feature_names = [header[i] for i in feature_indices]
    features = _read_numeric(stream, header, feature_indices)
    require_finite(features, feature_names)
    require_computable(features, feature_names)

    item_ids = None
    if id_index is not None:
        item_ids = [v.strip() for v in text_values[id_index]]
        require_unique_ids(item_ids, header[id_index])
    codes = classes = None
    if truth_index is not None:
        codes, classes = encode_classes([v.strip() for v in text_values[truth_index]])
    return ParsedTable(
        features=features,
        feature_names=feature_names,
        item_ids=item_ids,
        ground_truth=codes,
        ground_truth_classes=classes,
        ignored_columns=[header[i] for i in ignored],
    )


def _text(stream: BinaryIO) -> io.TextIOWrapper:
    stream.seek(0)
    # utf-8-sig drops the byte-order mark that spreadsheet programs like to write.
    return io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")


def _data_rows(stream: BinaryIO) -> Iterator[list[str]]:
    """Rows after the header, skipping blank lines (as numpy's reader does)."""
    text = _text(stream)
    try:
        reader = csv.reader(text)
        next(reader, None)
        for row in reader:
            if row and any(cell.strip() for cell in row):
                yield row
    finally:
        text.detach()  # keep the underlying upload open for the next pass


def _read_header(stream: BinaryIO) -> list[str]:
    text = _text(stream)
    try:
        header = next(csv.reader(text), None)
    finally:
        text.detach()
    if header is None or not any(cell.strip() for cell in header):
        raise InvalidInput("the file is empty: expected a header row, then one row per item")
    names = [cell.strip() for cell in header]
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if not name:
            raise InvalidInput(f"column {position} of the header has no name")
        if name in seen:
            raise InvalidInput(
                f"column name {name!r} appears twice in the header (columns {seen[name]} "
                f"and {position})"
            )
        seen[name] = position
    return names


def _column_index(header: list[str], name: str | None, parameter: str) -> int | None:
    if name is None or name == "":
        return None
    if name not in header:
        raise InvalidInput(
            f"{parameter} {name!r} is not a column of the file; its columns are "
            + ", ".join(repr(h) for h in header)
        )
    return header.index(name)


def _scan_rows(
    stream: BinaryIO, header: list[str], text_indices: list[int]
) -> tuple[int, list[list[str]], dict[int, list[str]]]:
    width = len(header)
    sample: list[list[str]] = []
    text_values: dict[int, list[str]] = {i: [] for i in text_indices}
    n_rows = 0
    for n_rows, row in enumerate(_data_rows(stream), start=1):
        if len(row) != width:
            raise InvalidInput(
                f"row {n_rows} has {len(row)} fields but the header has {width}; "
                "every row needs one value per column"
            )
        if n_rows <= SAMPLE_ROWS:
            sample.append(row)
        for i in text_indices:
            text_values[i].append(row[i])
    return n_rows, sample, text_values


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return "_" not in cell  # float() accepts "1_000"; numpy does not, and it is not a number


def _classify_columns(
    header: list[str], sample: list[list[str]], text_columns: set[int]
) -> tuple[list[int], list[int]]:
    """Feature columns are those whose sampled cells are numbers; all-text columns are ignored.

    A column with numbers and other text mixed is a feature column with a bad value.
    """
    features: list[int] = []
    ignored: list[int] = []
    for i, name in enumerate(header):
        if i in text_columns:
            continue
        numeric = [_is_number(row[i]) for row in sample]
        if any(numeric):
            bad_row = next((r for r, ok in enumerate(numeric) if not ok), None)
            if bad_row is not None:
                raise _bad_cell(sample[bad_row][i], name, bad_row + 1)
            features.append(i)
        else:
            ignored.append(i)
    return features, ignored


def _bad_cell(cell: str, column: str, row: int) -> InvalidInput:
    if cell.strip() == "":
        return InvalidInput(f"missing value in feature column {column!r} at row {row}")
    return InvalidInput(
        f"non-numeric value {cell.strip()[:40]!r} in feature column {column!r} at row {row}"
    )


def _read_numeric(stream: BinaryIO, header: list[str], indices: list[int]) -> np.ndarray:
    text = _text(stream)
    try:
        features = np.loadtxt(
            text,
            delimiter=",",
            skiprows=1,
            usecols=indices,
            dtype=np.float64,
            quotechar='"',
            comments=None,
            ndmin=2,
        )
    except ValueError as exc:
        raise _locate_bad_value(stream, header, indices) or InvalidInput(
            f"could not read the numeric columns: {exc}"
        ) from None
    finally:
        text.detach()
    return features


def _locate_bad_value(
    stream: BinaryIO, header: list[str], indices: list[int]
) -> InvalidInput | None:
    for row_number, row in enumerate(_data_rows(stream), start=1):
        for i in indices:
            if not _is_number(row[i]):
                return _bad_cell(row[i], header[i], row_number)
    return None
