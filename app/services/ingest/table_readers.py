"""One reader per table format: each turns an upload into row blocks (features, item ids,
ground truth) read as they are written, with the columns the table will have."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from app.services.errors import InvalidInput
from app.services.ingest.csv_table import csv_blocks, plan_csv
from app.services.ingest.h5ad_table import h5ad_blocks, open_h5ad
from app.services.ingest.npy_array import npy_blocks, plan_npy
from app.services.ingest.parquet_table import open_parquet, parquet_blocks

Block = tuple[np.ndarray, list[str] | None, list[str] | None]


@dataclass(frozen=True)
class TableColumns:
    """The columns a user named: the items' ids and their ground truth."""

    id_column: str | None = None
    ground_truth_column: str | None = None


@dataclass(frozen=True)
class TableBlocks:
    blocks: Iterable[Block]
    feature_names: list[str]
    dtype: str
    ignored_columns: list[str]


def read_npy(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    if columns.id_column or columns.ground_truth_column:
        raise InvalidInput(
            "id_column and ground_truth_column name CSV columns; an NPY array has none"
        )
    npy, array = plan_npy(stream)
    blocks = ((b, None, None) for b in npy_blocks(array, npy, chunk_rows))
    return TableBlocks(blocks, npy.feature_names, npy.dtype, [])


def read_parquet(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    parquet, file = open_parquet(
        stream, id_column=columns.id_column, ground_truth_column=columns.ground_truth_column
    )
    blocks = parquet_blocks(file, parquet, chunk_rows)
    return TableBlocks(blocks, parquet.feature_names, parquet.dtype, parquet.ignored_names)


def read_csv(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    plan = plan_csv(
        stream, id_column=columns.id_column, ground_truth_column=columns.ground_truth_column
    )
    return TableBlocks(csv_blocks(stream, plan), plan.feature_names, "float64", plan.ignored_names)


def read_h5ad(stream: BinaryIO, columns: TableColumns, chunk_rows: int) -> TableBlocks:
    plan, file = open_h5ad(
        stream, id_column=columns.id_column, ground_truth_column=columns.ground_truth_column
    )
    return TableBlocks(h5ad_blocks(file, plan, chunk_rows), plan.feature_names, plan.dtype, [])


TABLE_READERS: dict[str, Callable[[BinaryIO, TableColumns, int], TableBlocks]] = {
    "h5ad": read_h5ad,
    "npy": read_npy,
    "parquet": read_parquet,
    "csv": read_csv,
}
