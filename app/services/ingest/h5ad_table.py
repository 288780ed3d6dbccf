"""AnnData (`.h5ad`) uploads, the single-cell convention: X (cells x genes, dense or CSR sparse)
read row block by row block, never whole; the genes' names from `var`'s index; a cell's id and
ground truth from `obs` (its index, a string column or a categorical one). The reading itself is
shared with AnnData read in place (`app/store/sources/h5ad_source.py`).

Blocks are sized in bytes, not rows (a block of 20,000 genes is 64 MB at 400 rows): a wide
matrix costs the memory of a block. X stored column by column (CSC) cannot be read by rows
without reading it whole, so it is refused with the line that rewrites it as CSR."""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from app.services.errors import InvalidInput
from app.services.ingest.checks import require_label_apart
from app.services.ingest.label_column import LabelColumn
from app.store.sources.h5ad_source import (
    HDF5_MAGIC,
    XLayout,
    gene_names,
    obs_column,
    x_layout,
    x_rows,
)
from app.store.sources.source_types import SourceError

__all__ = ["HDF5_MAGIC", "H5adPlan", "h5ad_blocks", "open_h5ad"]

BLOCK_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class H5adPlan:
    n_rows: int
    feature_names: list[str]
    dtype: str  # float32 when X is, else float64
    sparse: bool
    id_column: str | None
    ground_truth_column: str | None
    label_column: str | None = None


def open_h5ad(
    stream: BinaryIO,
    *,
    id_column: str | None,
    ground_truth_column: str | None,
    label_column: str | None = None,
) -> tuple[H5adPlan, Any]:
    """The plan and the open file (h5py reads the upload where it lies, a block at a time)."""
    import h5py

    stream.seek(0)
    try:
        file = h5py.File(stream, "r")
    except OSError as exc:
        raise InvalidInput(f"the file is not a readable HDF5 (AnnData) file: {exc}") from None
    try:
        layout = x_layout(file)
        for column in (id_column, ground_truth_column, label_column):
            if column is not None:
                obs_column(file, column)  # it exists, or the refusal names the ones that do
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None
    require_label_apart(label_column, id_column, ground_truth_column)
    plan = H5adPlan(
        n_rows=layout.n_rows,
        feature_names=gene_names(file, layout.n_columns),
        dtype=layout.dtype,
        sparse=layout.sparse,
        id_column=id_column,
        ground_truth_column=ground_truth_column,
        label_column=label_column,
    )
    return plan, file


def h5ad_blocks(
    file: Any, plan: H5adPlan, chunk_rows: int, labels: LabelColumn | None = None
) -> Iterator[tuple[NDArray[np.floating], list[str] | None, list[str] | None]]:
    """X's rows block by block (dense), with the cells' ids and classes when named; the label
    column's values, when named, go to ``labels`` as each block passes."""
    width = len(plan.feature_names)
    rows = max(1, min(chunk_rows, BLOCK_BYTES // (8 * width)))
    layout = XLayout(plan.n_rows, width, plan.dtype, plan.sparse)
    ids = obs_column(file, plan.id_column) if plan.id_column else None
    truth = obs_column(file, plan.ground_truth_column) if plan.ground_truth_column else None
    label = obs_column(file, plan.label_column) if plan.label_column else None
    try:
        for start in range(0, plan.n_rows, rows):
            stop = min(start + rows, plan.n_rows)
            if labels is not None and label is not None:
                labels.add(label(start, stop))
            yield (
                x_rows(file, layout, start, stop),
                ids(start, stop) if ids else None,
                truth(start, stop) if truth else None,
            )
    finally:
        file.close()
