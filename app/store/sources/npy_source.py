"""An NPY file read in place: its header once, then a row range as one byte range, since a C-order
2-D array's rows lie one after another. Only C order and plain numbers are read in place."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.store.sources.filesystems import changed, open_checked, reading, short, version
from app.store.sources.source_types import Layout, SourceError, SourceFile
from app.store.sources.values import float_dtype

NPY_BLOCK = 1 << 16  # the header (and the small over-read after a range) in one request


def open_npy(fs: Any, path: str) -> Any:
    # Small read-ahead: the header in one request, a row range in one more (not 50 MiB more).
    return fs.open(path, "rb", block_size=NPY_BLOCK, cache_type="readahead")


def inspect_npy(
    fs: Any, path: str, url: str, options: dict[str, Any], info: dict[str, Any]
) -> Layout:
    with reading(url, options, "read as NPY"), open_npy(fs, path) as f:
        shape, dtype, _ = npy_header(f, url)
    return Layout(
        files=(SourceFile(url, shape[0], int(info.get("size") or 0), version(info)),),
        columns=tuple(f"x{j}" for j in range(shape[1])),
        dtype=float_dtype(dtype),
    )


def npy_header(f: Any, url: str) -> tuple[tuple[int, int], np.dtype, int]:
    """The shape, dtype and data offset of the NPY file open at its start."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise SourceError(f"{url}: NPY format version {version} is not read in place")
    except SourceError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise SourceError(f"{url} is not an NPY file ({short(str(exc))})") from None
    dtype = np.dtype(dtype)
    if len(shape) != 2:
        raise SourceError(
            f"{url}: an array of {len(shape)} dimensions; a table is 2-D (rows x columns)"
        )
    if fortran:
        raise SourceError(
            f"{url} is in Fortran (column) order; rows are read in place from C order only "
            "(save it with np.ascontiguousarray)"
        )
    if dtype.kind not in "fiub" or dtype.hasobject or dtype.fields:
        raise SourceError(f"{url}: an array of {dtype}; a table read in place holds numbers")
    return (int(shape[0]), int(shape[1])), dtype, int(f.tell())


def read_npy(
    fs: Any,
    protocol: str,
    options: dict[str, Any],
    file: SourceFile,
    d: int,
    a: int,
    b: int,
    out: np.ndarray,
) -> None:
    with reading(file.url, options), open_checked(fs, protocol, file, opener=open_npy) as f:
        (rows, columns), dtype, offset = npy_header(f, file.url)
        if rows != file.rows or columns != d:
            raise changed(file.url)
        row_bytes = d * dtype.itemsize
        f.seek(offset + a * row_bytes)
        data = f.read((b - a) * row_bytes)
        if len(data) != (b - a) * row_bytes:
            raise SourceError(f"{file.url} is shorter than its header says (truncated)")
        out[...] = np.frombuffer(data, dtype=dtype).reshape(b - a, d)
