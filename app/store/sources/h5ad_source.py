"""AnnData (`.h5ad`), the single-cell convention, read in place and at upload: X (cells x
genes, dense or CSR sparse) by row range, never whole; the genes' names from `var`'s index; a
cell's id and class from `obs` (its index, a string column or a categorical one).

In place, h5py reads the file through fsspec (a local file, or ranged GETs on S3 with a
read-ahead of a few MB), and each read first checks that the file is still the version that was
recorded. X stored column by column (CSC) cannot be read by rows without reading it whole, so it
is refused with the line that rewrites it as CSR. The uploads' reader
(`app/services/ingest/h5ad_table.py`) shares these functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.store.sources.filesystems import changed, open_checked, reading, version
from app.store.sources.source_types import Layout, SourceError, SourceFile

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
READ_AHEAD = 4 * 1024**2  # h5py's many small reads of one chunk's neighbourhood, in one request


@dataclass(frozen=True)
class XLayout:
    n_rows: int
    n_columns: int
    dtype: str  # float32 when X is, else float64
    sparse: bool


def x_layout(file: Any) -> XLayout:
    """What X is, from its metadata (SourceError when it cannot be read by rows)."""
    import h5py

    if "X" not in file:
        raise SourceError("the HDF5 file has no X matrix: an AnnData (.h5ad) file is expected")
    x = file["X"]
    if isinstance(x, h5py.Group):
        encoding = text(x.attrs.get("encoding-type", ""))
        if encoding == "csc_matrix":
            raise SourceError(
                "X is stored column by column (CSC), which cannot be read a block of cells at "
                "a time; write it by rows first: adata.X = adata.X.tocsr(); adata.write_h5ad(...)"
            )
        if encoding != "csr_matrix":
            raise SourceError(f"X is stored as {encoding or 'an unknown group'!r}, not a matrix")
        n_rows, n_columns = (int(v) for v in x.attrs["shape"])
        kind = x["data"].dtype
        sparse = True
    else:
        if x.ndim != 2:
            raise SourceError(f"X has {x.ndim} dimensions; a cells x genes matrix is expected")
        n_rows, n_columns = (int(v) for v in x.shape)
        kind = x.dtype
        sparse = False
    if kind.kind not in "fiub":
        raise SourceError(f"X holds {kind}, not numbers")
    if n_rows == 0 or n_columns == 0:
        raise SourceError(f"X is {n_rows} x {n_columns}: there is nothing to cluster")
    return XLayout(n_rows, n_columns, "float32" if kind == np.float32 else "float64", sparse)


def x_rows(file: Any, layout: XLayout, start: int, stop: int) -> NDArray[np.floating]:
    """Rows [start, stop) of X, dense, in ``layout.dtype``."""
    x = file["X"]
    if layout.sparse:
        from scipy import sparse as sp

        bounds = np.asarray(x["indptr"][start : stop + 1], dtype=np.int64)
        first, last = int(bounds[0]), int(bounds[-1])
        block = sp.csr_matrix(
            (x["data"][first:last], x["indices"][first:last], bounds - first),
            shape=(stop - start, layout.n_columns),
        ).toarray()
    else:
        block = np.asarray(x[start:stop])
    return np.ascontiguousarray(block, dtype=layout.dtype)


def obs_column(file: Any, name: str) -> Callable[[int, int], list[str]]:
    """A reader of ``obs``'s column ``name`` (its index by its own name or ``_index``) as text
    for rows [start, stop)."""
    import h5py

    obs = file.get("obs")
    if obs is None or not isinstance(obs, h5py.Group):
        raise SourceError(f"the file has no obs table, so no column {name!r}")
    index = text(obs.attrs.get("_index", "_index"))
    key = index if name in (index, "_index") else name
    if key not in obs:
        found = [index, *(text(c) for c in obs.attrs.get("column-order", []))]
        raise SourceError(f"obs has no column {name!r}; it has {', '.join(found)}")
    column = obs[key]
    if isinstance(column, h5py.Group):  # categorical: codes into categories, -1 missing
        categories = [text(c) for c in column["categories"][()]]
        codes = column["codes"]

        def categorical(start: int, stop: int) -> list[str]:
            return [categories[c] if c >= 0 else "" for c in codes[start:stop].tolist()]

        return categorical

    def plain(start: int, stop: int) -> list[str]:
        return [text(v) for v in column[start:stop]]

    return plain


def gene_names(file: Any, n_columns: int) -> list[str]:
    """The genes' names (``var``'s index), or x0, x1, ... when the file has none."""
    var = file.get("var")
    if var is not None:
        index = text(var.attrs.get("_index", "_index"))
        if index in var and var[index].shape == (n_columns,):
            names = [text(v) for v in var[index][()]]
            if len(set(names)) == len(names):
                return names
    return [f"x{j}" for j in range(n_columns)]


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# -- in place ---------------------------------------------------------------------------------


def _open(fs: Any, path: str) -> Any:
    return fs.open(path, "rb", block_size=READ_AHEAD, cache_type="readahead")


def _h5(f: Any, url: str) -> Any:
    import h5py

    try:
        return h5py.File(f, "r")
    except OSError as exc:
        raise SourceError(f"{url} is not a readable HDF5 (AnnData) file: {exc}") from None


def inspect_h5ad(
    fs: Any, path: str, url: str, options: dict[str, Any], info: dict[str, Any]
) -> Layout:
    with reading(url, options, "read as AnnData"), _open(fs, path) as f, _h5(f, url) as file:
        try:
            layout = x_layout(file)
        except SourceError as exc:
            raise SourceError(f"{url}: {exc}") from None
        names = gene_names(file, layout.n_columns)
    return Layout(
        files=(SourceFile(url, layout.n_rows, int(info.get("size") or 0), version(info)),),
        columns=tuple(names),
        dtype=layout.dtype,
    )


def read_h5ad(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    columns: tuple[str, ...] | list[str],
    a: int,
    b: int,
    out: NDArray[np.floating],
) -> None:
    with (
        reading(file.url, options),
        open_checked(fs, protocol, file, opener=_open) as f,
        _h5(f, file.url) as h5,
    ):
        layout = x_layout(h5)
        if layout.n_columns != len(columns) or layout.n_rows != file.rows:
            raise changed(file.url)
        out[...] = x_rows(h5, layout, a, b)


def h5ad_strings(
    fs: Any, protocol: str, options: dict[str, Any], file: SourceFile, column: str, a: int, b: int
) -> list[str]:
    with (
        reading(file.url, options),
        open_checked(fs, protocol, file, opener=_open) as f,
        _h5(f, file.url) as h5,
    ):
        try:
            return obs_column(h5, column)(a, b)
        except SourceError as exc:
            raise SourceError(f"{file.url}: {exc}") from None
