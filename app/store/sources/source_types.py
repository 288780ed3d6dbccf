"""The types every module of a table read in place shares: the error it raises, one object of
the source, and what inspecting a format finds.

They live apart from `tables.py` so that the format modules, which `tables.py` imports, can use
them without importing `tables.py` back (no import circle); `tables.py` re-exports the first two."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SourceError(ValueError):
    """The source cannot be read as asked (missing object, unreadable format, non-numeric column, a
    changed object); the message names the object (its URL), the row and the column where it can,
    and never an option value (credentials)."""


@dataclass(frozen=True)
class CsvLayout:
    """What a CSV's inspection counted (`csv_source.py`): no metadata says where its rows are."""

    header: tuple[str, ...]  # every column's name, in the file's order
    delimiter: str
    marks: tuple[tuple[int, int], ...]  # (row, byte offset of its line), rows ascending

    def record(self) -> dict[str, Any]:
        return {
            "header": list(self.header),
            "delimiter": self.delimiter,
            "marks": [list(m) for m in self.marks],
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> CsvLayout:
        return cls(
            header=tuple(record["header"]),
            delimiter=str(record["delimiter"]),
            marks=tuple((int(r), int(o)) for r, o in record["marks"]),
        )


@dataclass(frozen=True)
class SourceFile:
    url: str  # "s3://bucket/prefix/part-0003.parquet" or "file:///abs/x.parquet"
    rows: int
    size: int
    version: str  # the ETag for S3, else the mtime (as text): how a change is seen
    csv: CsvLayout | None = None  # a CSV's header and row index; None for other formats

    def record(self) -> dict[str, Any]:
        """What ``meta.source`` keeps of the object."""
        kept: dict[str, Any] = {
            "url": self.url, "rows": self.rows, "size": self.size, "version": self.version
        }  # fmt: skip
        if self.csv is not None:
            kept["csv"] = self.csv.record()
        return kept

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SourceFile:
        layout = record.get("csv")
        return cls(
            url=record["url"],
            rows=int(record["rows"]),
            size=int(record["size"]),
            version=str(record["version"]),
            csv=CsvLayout.from_record(layout) if layout else None,
        )


@dataclass(frozen=True)
class Layout:
    """What a format's inspection finds, from metadata only; `tables.inspect_table` makes a
    `SourceTable` of it (its rows: the files' rows summed)."""

    files: tuple[SourceFile, ...]  # in row order (npy, zarr: one, the file or the array's root)
    columns: tuple[str, ...]  # the feature columns (npy, zarr: "x0", "x1", ...)
    dtype: str  # "float32" or "float64"
