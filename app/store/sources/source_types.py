"""The types every module of a table read in place shares: the error it raises, one object of
the source, and what inspecting a format finds.

They live apart from `tables.py` so that the format modules, which `tables.py` imports, can use
them without importing `tables.py` back (no import circle); `tables.py` re-exports the first two."""

from __future__ import annotations

from dataclasses import dataclass


class SourceError(ValueError):
    """The source cannot be read as asked (missing object, unreadable format, non-numeric column, a
    changed object); the message names the object (its URL), the row and the column where it can,
    and never an option value (credentials)."""


@dataclass(frozen=True)
class SourceFile:
    url: str  # "s3://bucket/prefix/part-0003.parquet" or "file:///abs/x.parquet"
    rows: int
    size: int
    version: str  # the ETag for S3, else the mtime (as text): how a change is seen


@dataclass(frozen=True)
class Layout:
    """What a format's inspection finds, from metadata only; `tables.inspect_table` makes a
    `SourceTable` of it (its rows: the files' rows summed)."""

    files: tuple[SourceFile, ...]  # in row order (npy, zarr: one, the file or the array's root)
    columns: tuple[str, ...]  # the feature columns (npy, zarr: "x0", "x1", ...)
    dtype: str  # "float32" or "float64"
