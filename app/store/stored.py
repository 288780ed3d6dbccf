"""What the store's modules share: what SQL keeps about one stored array, the one error a
caller sees when the store fails, and how each dtype is compressed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr.codecs

BYTES_CHUNK = 16 * 1024 * 1024  # a blob's chunk: whole pictures read in a few requests
# Measured features (floats) barely compress, and compressing them costs more than writing them:
# raw chunks. Integers (labels, class codes, pixel maps) and bytes (ids, pictures) get
# byte-shuffled LZ4, fast both ways (bit-shuffling was 3x slower to write).
_LZ4: Any = (zarr.codecs.BloscCodec(cname="lz4", clevel=1, shuffle="shuffle"),)


def compressors_for(dtype: np.dtype) -> Any:
    """The Zarr compressors of a stored array of this dtype."""
    return None if dtype.kind == "f" else _LZ4


class StoreUnavailable(Exception):
    """The array store cannot be read or written (a wrong URL, no permission, no network)."""


@dataclass(frozen=True)
class StoredInfo:
    """What SQL keeps about one stored array."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    chunk_rows: int
    content_hash: str
    nbytes: int


@contextmanager
def store_errors(failed: str, *, absent_passes: bool = False) -> Iterator[None]:
    """Whatever goes wrong inside, as ``StoreUnavailable("<failed>: <why>")``: the one error a
    caller of the store handles. With ``absent_passes``, FileNotFoundError goes through as it
    is (the caller decides what absent means: an empty listing, nothing to delete)."""
    try:
        yield
    except (StoreUnavailable, MemoryError):  # memory is the server's, not the store's
        raise
    except Exception as exc:
        if absent_passes and isinstance(exc, FileNotFoundError):
            raise
        raise StoreUnavailable(f"{failed}: {exc}") from exc
