"""Parquet tables, read a row group at a time: numeric columns (integers, floats, booleans)
become features, the id and ground-truth columns are read as text, the label column as it is
(`label_column.py`), and other columns (text, dates, nested) are ignored and reported."""

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from app.services.errors import InvalidInput
from app.services.ingest.checks import arrow_floats, require_label_apart, require_nonempty_shape
from app.services.ingest.label_column import LabelColumn

PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class ParquetPlan:
    feature_names: list[str]
    id_column: str | None
    truth_column: str | None
    ignored_names: list[str]
    n_rows: int
    dtype: str  # float32 when every feature column is float32, else float64
    label_column: str | None = None


def _source(stream: BinaryIO) -> Any:
    """The upload opened by Arrow itself when it is a file on disk (column chunks are then read
    without a Python call per read: twice as fast), else the stream itself. Not memory-mapped:
    every page of the file read would then count in the server's resident memory (2.3 GiB
    for a 10M x 20 upload)."""
    try:
        descriptor = stream.fileno()  # a spooled upload rolls over to its temporary file here
    except (OSError, AttributeError, io.UnsupportedOperation):
        return stream
    proc = Path(f"/proc/self/fd/{descriptor}")
    return pa.OSFile(str(proc)) if proc.exists() else stream


def _is_numeric(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    )


def open_parquet(
    stream: BinaryIO,
    *,
    id_column: str | None = None,
    ground_truth_column: str | None = None,
    label_column: str | None = None,
) -> tuple[ParquetPlan, pq.ParquetFile]:
    try:
        stream.seek(0)
        # pre_buffer would read every row group's column chunks ahead (the whole file in
        # memory); one row group at a time keeps an upload of any length in bounded memory.
        file = pq.ParquetFile(_source(stream), pre_buffer=False)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInput(f"the Parquet file is truncated or corrupt ({exc})") from None
    schema = file.schema_arrow
    names = list(schema.names)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InvalidInput(f"column name {twice!r} appears twice in the Parquet file")
    for parameter, value in (
        ("id_column", id_column),
        ("ground_truth_column", ground_truth_column),
        ("label_column", label_column),
    ):
        if value and value not in names:
            raise InvalidInput(
                f"{parameter} {value!r} is not a column of the file; its columns are "
                + ", ".join(repr(n) for n in names)
            )
    if id_column and id_column == ground_truth_column:
        raise InvalidInput("id_column and ground_truth_column must be different columns")
    require_label_apart(label_column, id_column, ground_truth_column)
    text = {c for c in (id_column, ground_truth_column, label_column) if c}
    features = [n for n in names if n not in text and _is_numeric(schema.field(n).type)]
    ignored = [n for n in names if n not in text and n not in features]
    n_rows = file.metadata.num_rows
    require_nonempty_shape(n_rows, len(features))
    all_float32 = all(schema.field(n).type == pa.float32() for n in features)
    plan = ParquetPlan(
        features, id_column or None, ground_truth_column or None, ignored, n_rows,
        "float32" if all_float32 else "float64", label_column or None,
    )  # fmt: skip
    return plan, file


def parquet_blocks(
    file: pq.ParquetFile, plan: ParquetPlan, rows: int, labels: LabelColumn | None = None
) -> Iterator[tuple[np.ndarray, list[str] | None, list[str] | None]]:
    """(features, ids, ground truth) per block of rows; the label column's values, when it has
    one, go to ``labels`` as each block passes."""
    named = (plan.id_column, plan.truth_column, plan.label_column)
    columns = [*plan.feature_names, *(c for c in named if c)]
    first = 0
    try:
        for batch in file.iter_batches(batch_size=rows, columns=columns):
            features = np.column_stack(
                [
                    arrow_floats(batch.column(name), name, first, plan.dtype)
                    for name in plan.feature_names
                ]
            )
            ids = _text(batch.column(plan.id_column)) if plan.id_column else None
            truth = _text(batch.column(plan.truth_column)) if plan.truth_column else None
            if labels is not None and plan.label_column:
                labels.add(batch.column(plan.label_column))
            yield features, ids, truth
            first += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInput(f"the Parquet file is truncated or corrupt ({exc})") from None


def _text(column: pa.Array) -> list[str]:
    """Cells as text; a missing one as empty (an empty id is refused, an empty class is
    unknown)."""
    return ["" if v is None else str(v) for v in column.to_pylist()]
