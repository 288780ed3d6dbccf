"""Which format a path holds, when it is not said: from a file's suffix, or from what a
directory holds (a Zarr array's metadata document, else Parquet files, else CSV files)."""

from __future__ import annotations

from typing import Any

from app.store.sources.csv_source import is_compressed_csv, is_csv
from app.store.sources.parquet_source import PARQUET_SUFFIXES, is_parquet
from app.store.sources.source_types import SourceError
from app.store.sources.zarr_source import ZARR_METADATA

FORMATS = ("parquet", "npy", "zarr", "h5ad", "csv")

READ = (
    "read in place: Parquet (a .parquet file or a directory of them), CSV (.csv, .tsv: a file "
    "or a directory of them, uncompressed), NPY (.npy), Zarr (an array's directory, with "
    "zarr.json or .zarray) and AnnData (.h5ad)"
)


def detect(fs: Any, path: str, url: str, is_dir: bool) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if not is_dir:
        if name.endswith(PARQUET_SUFFIXES):
            return "parquet"
        if name.endswith(".npy"):
            return "npy"
        if name.endswith(".h5ad"):
            return "h5ad"
        if is_csv(name) or is_compressed_csv(name):
            return "csv"
        raise SourceError(f"{url}: not a format read in place; formats {READ}")
    names = {str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    if names & set(ZARR_METADATA):
        return "zarr"
    found = [str(p) for p in fs.find(path)]
    if any(is_parquet(p) for p in found):
        return "parquet"
    if any(is_csv(p) or is_compressed_csv(p) for p in found):
        return "csv"
    raise SourceError(f"{url} holds no table read in place; formats {READ}")
