"""NPY arrays: a 2-D (or 1-D, read as one feature) array of real numbers."""

import math
from typing import Any, BinaryIO

import numpy as np

from app.services.errors import InvalidInput
from app.services.ingest.checks import (
    require_computable,
    require_finite,
    require_nonempty_shape,
)
from app.services.ingest.parsed import ParsedTable

NPY_MAGIC = b"\x93NUMPY"


def _check_header(stream: BinaryIO) -> None:
    """Refuse, from the header alone, a file whose data is not what the header claims: only a
    numeric array whose shape and dtype account for exactly the bytes after the header is read
    (a header may claim terabytes that NumPy would try to allocate)."""
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise InvalidInput(f"NPY format version {version[0]}.{version[1]} is not supported")
    except ValueError as exc:
        raise InvalidInput(f"the NPY file is truncated or corrupt ({exc})") from None
    if dtype.hasobject:
        raise InvalidInput("the NPY file holds Python objects; only numeric arrays are accepted")
    if dtype.names is not None or dtype.kind not in "biuf":
        raise InvalidInput(
            f"the NPY array has dtype {dtype}; only integer, boolean or real float arrays are "
            "accepted"
        )
    claimed = math.prod(shape) * dtype.itemsize
    present = size - stream.tell()
    if claimed != present:
        raise InvalidInput(
            f"the NPY header claims an array of shape {shape} and dtype {dtype}, "
            f"{claimed:,} bytes of data, but the file has {present:,} bytes after the header; "
            "it is truncated or corrupt"
        )


def parse_npy(stream: BinaryIO) -> ParsedTable:
    _check_header(stream)
    stream.seek(0)
    try:
        array = np.load(stream, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise InvalidInput(
                "the NPY file holds Python objects; only numeric arrays are accepted"
            ) from None
        raise InvalidInput(f"the NPY file is truncated or corrupt ({exc})") from None
    except (OSError, EOFError) as exc:
        raise InvalidInput(f"the NPY file is truncated or corrupt ({exc})") from None
    if not isinstance(array, np.ndarray):
        raise InvalidInput("expected a single NPY array, not an NPZ archive")
    if array.dtype.names is not None or array.dtype.kind not in "biuf":
        raise InvalidInput(
            f"the NPY array has dtype {array.dtype}; only integer, boolean or real float "
            "arrays are accepted"
        )
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2:
        raise InvalidInput(f"the NPY array has shape {array.shape}; expected (n_items, n_features)")
    require_nonempty_shape(array.shape[0], array.shape[1])
    dtype = np.float32 if array.dtype == np.float32 else np.float64
    features: np.ndarray[Any, np.dtype[np.floating]] = np.ascontiguousarray(array, dtype=dtype)
    names = [f"x{i}" for i in range(features.shape[1])]
    require_finite(features, names)
    require_computable(features, names)
    return ParsedTable(features=features, feature_names=names)
