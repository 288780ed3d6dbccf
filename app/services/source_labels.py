"""A table's label column read from its source, for label annotations: at import (every row)
and at a sync that reads only the rows added (from the first of them)."""

from collections.abc import Callable

import pyarrow as pa

from app.services.ingest.label_column import LabelColumn, Place
from app.store.sources.filesystems import filesystem
from app.store.sources.parquet_source import parquet_pieces
from app.store.sources.tables import SourceTable
from app.store.sources.values import at

# An AnnData's obs column is read as text this many rows at a time.
LABEL_BLOCK_ROWS = 1 << 18


def read_labels(
    table: SourceTable,
    column: str,
    progress: Callable[[float], None] | None = None,
    first: int = 0,
) -> LabelColumn:
    """The label column of a Parquet table (as Arrow, a row group at a time), or of a CSV or
    an AnnData file's obs (as text, in blocks); ``progress(0.0)`` between parts lets a stopping
    server stop it. A refusal names the object and the row. From row ``first`` on (a sync that
    reads only the rows added): the rows before it have no label here."""
    if table.format == "parquet":
        labels = LabelColumn(column, numbers_in_text=False)
        labels.add(pa.nulls(first))
        fs = filesystem(table.protocol, table.options)
        multi = len(table.files) > 1
        offset = 0
        for file in table.files:
            if offset + file.rows > first:
                a = max(0, first - offset)
                pieces = parquet_pieces(
                    fs, table.options, file, [column], a, file.rows, strings=True
                )
                for piece, local in pieces:
                    place = _place(file.url, offset + local, local, multi)
                    labels.add(piece.column(column), place)
                    if progress is not None:
                        progress(0.0)
            offset += file.rows
        return labels
    labels = LabelColumn(column, numbers_in_text=True)  # an obs column, read as text
    labels.add(pa.nulls(first))
    url = table.files[0].url if table.files else ""
    for start in range(first, table.n_rows, LABEL_BLOCK_ROWS):
        stop = min(start + LABEL_BLOCK_ROWS, table.n_rows)
        labels.add(table.strings(column, start, stop), _place(url, start, start, False))
        if progress is not None:
            progress(0.0)
    return labels


def _place(url: str, first: int, local: int, multi: bool) -> Place:
    """A part's k-th row as the source's refusals name it: the object, the table's row (and
    the file's own row in a dataset of files)."""
    return lambda k: at(url, first + k, local + k, multi)
