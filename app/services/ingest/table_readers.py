"""One reader per table format: each turns an upload into row blocks (features, item ids,
ground truth) read as they are written, with the columns the table will have; the expert's
label column, when named, is gathered as the blocks pass (`label_column.py`)."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from app.services.errors import InvalidInput
from app.services.ingest.csv_table import csv_blocks, plan_csv
from app.services.ingest.h5ad_table import h5ad_blocks, open_h5ad
from app.services.ingest.label_column import LabelColumn
from app.services.ingest.npy_array import npy_blocks, plan_npy
from app.services.ingest.parquet_table import open_parquet, parquet_blocks

Block = tuple[np.ndarray, list[str] | None, list[str] | None]


@dataclass(frozen=True)
class TableColumns:
    """The columns a user named: the items' ids, their ground truth and the expert's labels."""

    id_column: str | None = None
    ground_truth_column: str | None = None
    label_column: str | None = None


@dataclass(frozen=True)
class TableBlocks:
    blocks: Iterable[Block]
    feature_names: list[str]
    dtype: str
    ignored_columns: list[str]
    labels: LabelColumn | None = None  # filled as `blocks` are read


def read_npy(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    if columns.id_column or columns.ground_truth_column or columns.label_column:
        raise InvalidInput(
            "id_column, ground_truth_column and label_column name CSV columns; an NPY array "
            "has none"
        )
    npy, array = plan_npy(stream)
    blocks = ((b, None, None) for b in npy_blocks(array, npy, chunk_rows))
    return TableBlocks(blocks, npy.feature_names, npy.dtype, [])


def read_parquet(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    parquet, file = open_parquet(
        stream,
        id_column=columns.id_column,
        ground_truth_column=columns.ground_truth_column,
        label_column=columns.label_column,
    )
    labels = _labels(columns, numbers_in_text=False)  # Parquet's numbers are typed
    blocks = parquet_blocks(file, parquet, chunk_rows, labels)
    return TableBlocks(blocks, parquet.feature_names, parquet.dtype, parquet.ignored_names, labels)


def read_csv(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    plan = plan_csv(
        stream,
        id_column=columns.id_column,
        ground_truth_column=columns.ground_truth_column,
        label_column=columns.label_column,
    )
    labels = _labels(columns, numbers_in_text=True)
    blocks = csv_blocks(stream, plan, labels)
    return TableBlocks(blocks, plan.feature_names, "float64", plan.ignored_names, labels)


def read_h5ad(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    plan, file = open_h5ad(
        stream,
        id_column=columns.id_column,
        ground_truth_column=columns.ground_truth_column,
        label_column=columns.label_column,
    )
    labels = _labels(columns, numbers_in_text=True)  # obs columns are read as text
    blocks = h5ad_blocks(file, plan, chunk_rows, labels)
    return TableBlocks(blocks, plan.feature_names, plan.dtype, [], labels)


def _labels(columns: TableColumns, *, numbers_in_text: bool) -> LabelColumn | None:
    if not columns.label_column:
        return None
    return LabelColumn(columns.label_column, numbers_in_text=numbers_in_text)


TABLE_READERS: dict[str, Callable[[BinaryIO, TableColumns, int], TableBlocks]] = {
    "h5ad": read_h5ad,
    "npy": read_npy,
    "parquet": read_parquet,
    "csv": read_csv,
}
