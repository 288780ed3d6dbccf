"""AnnData (`.h5ad`), the single-cell convention: X (cells x genes, dense or CSR sparse) read
row block by row block, never whole; the genes' names from `var`'s index; a cell's id and
ground truth from `obs` (its index, a string column or a categorical one).

Blocks are sized in bytes, not rows (a block of 20,000 genes is 64 MB at 400 rows): a wide
matrix costs the memory of a block. X stored column by column (CSC) cannot be read by rows
without reading it whole, so it is refused with the line that rewrites it as CSR."""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from app.services.errors import InvalidInput

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
BLOCK_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class H5adPlan:
    n_rows: int
    feature_names: list[str]
    dtype: str  # float32 when X is, else float64
    sparse: bool
    id_column: str | None
    ground_truth_column: str | None


def open_h5ad(
    stream: BinaryIO, *, id_column: str | None, ground_truth_column: str | None
) -> tuple[H5adPlan, Any]:
    """The plan and the open file (h5py reads the upload where it lies, a block at a time)."""
    import h5py

    stream.seek(0)
    try:
        file = h5py.File(stream, "r")
    except OSError as exc:
        raise InvalidInput(f"the file is not a readable HDF5 (AnnData) file: {exc}") from None
    if "X" not in file:
        raise InvalidInput("the HDF5 file has no X matrix: an AnnData (.h5ad) file is expected")
    x = file["X"]
    if isinstance(x, h5py.Group):
        encoding = _text(x.attrs.get("encoding-type", ""))
        if encoding == "csc_matrix":
            raise InvalidInput(
                "X is stored column by column (CSC), which cannot be read a block of cells at "
                "a time; write it by rows first: adata.X = adata.X.tocsr(); adata.write_h5ad(...)"
            )
        if encoding != "csr_matrix":
            raise InvalidInput(f"X is stored as {encoding or 'an unknown group'!r}, not a matrix")
        n_rows, n_columns = (int(v) for v in x.attrs["shape"])
        kind = x["data"].dtype
        sparse = True
    else:
        if x.ndim != 2:
            raise InvalidInput(f"X has {x.ndim} dimensions; a cells x genes matrix is expected")
        n_rows, n_columns = (int(v) for v in x.shape)
        kind = x.dtype
        sparse = False
    if kind.kind not in "fiub":
        raise InvalidInput(f"X holds {kind}, not numbers")
    if n_rows == 0 or n_columns == 0:
        raise InvalidInput(f"X is {n_rows} x {n_columns}: there is nothing to cluster")
    for column in (id_column, ground_truth_column):
        if column is not None:
            _obs_column(file, column)  # it exists, or the refusal names the ones that do
    plan = H5adPlan(
        n_rows=n_rows,
        feature_names=_names(file, n_columns),
        dtype="float32" if kind == np.float32 else "float64",
        sparse=sparse,
        id_column=id_column,
        ground_truth_column=ground_truth_column,
    )
    return plan, file


def h5ad_blocks(
    file: Any, plan: H5adPlan, chunk_rows: int
) -> Iterator[tuple[NDArray[np.floating], list[str] | None, list[str] | None]]:
    """X's rows block by block (dense), with the cells' ids and classes when named."""
    from scipy import sparse as sp

    width = len(plan.feature_names)
    rows = max(1, min(chunk_rows, BLOCK_BYTES // (8 * width)))
    x = file["X"]
    indptr = x["indptr"] if plan.sparse else None
    ids = _obs_column(file, plan.id_column) if plan.id_column else None
    truth = _obs_column(file, plan.ground_truth_column) if plan.ground_truth_column else None
    try:
        for start in range(0, plan.n_rows, rows):
            stop = min(start + rows, plan.n_rows)
            if indptr is not None:
                bounds = np.asarray(indptr[start : stop + 1], dtype=np.int64)
                first, last = int(bounds[0]), int(bounds[-1])
                block = sp.csr_matrix(
                    (x["data"][first:last], x["indices"][first:last], bounds - first),
                    shape=(stop - start, width),
                ).toarray()
            else:
                block = np.asarray(x[start:stop])
            yield (
                np.ascontiguousarray(block, dtype=plan.dtype),
                ids(start, stop) if ids else None,
                truth(start, stop) if truth else None,
            )
    finally:
        file.close()


def _obs_column(file: Any, name: str) -> Any:
    """A reader of ``obs``'s column ``name`` (its index by its own name or ``_index``) as
    text for rows [start, stop)."""
    import h5py

    obs = file.get("obs")
    if obs is None or not isinstance(obs, h5py.Group):
        raise InvalidInput(f"the file has no obs table, so no column {name!r}")
    index = _text(obs.attrs.get("_index", "_index"))
    key = index if name in (index, "_index") else name
    if key not in obs:
        found = [index, *(_text(c) for c in obs.attrs.get("column-order", []))]
        raise InvalidInput(f"obs has no column {name!r}; it has {', '.join(found)}")
    column = obs[key]
    if isinstance(column, h5py.Group):  # categorical: codes into categories, -1 missing
        categories = [_text(c) for c in column["categories"][()]]
        codes = column["codes"]

        def categorical(start: int, stop: int) -> list[str]:
            return [categories[c] if c >= 0 else "" for c in codes[start:stop].tolist()]

        return categorical

    def plain(start: int, stop: int) -> list[str]:
        return [_text(v) for v in column[start:stop]]

    return plain


def _names(file: Any, n_columns: int) -> list[str]:
    """The genes' names (``var``'s index), or x0, x1, ... when the file has none."""
    var = file.get("var")
    if var is not None:
        index = _text(var.attrs.get("_index", "_index"))
        if index in var and var[index].shape == (n_columns,):
            names = [_text(v) for v in var[index][()]]
            if len(set(names)) == len(names):
                return names
    return [f"x{j}" for j in range(n_columns)]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
