"""NPY arrays: a 2-D (or 1-D, read as one feature) array of real numbers."""

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from app.services.errors import InvalidInput
from app.services.ingest.checks import require_nonempty_shape

NPY_MAGIC = b"\x93NUMPY"


def _check_header(stream: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Refuse, from the header alone, a file whose data is not what the header claims: only a
    numeric array whose shape and dtype account for exactly the bytes after the header is read
    (a header may claim terabytes that NumPy would try to allocate)."""
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
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
    return tuple(shape), bool(fortran), dtype


@dataclass(frozen=True)
class NpyPlan:
    n_rows: int
    n_columns: int
    dtype: str  # what the features are stored as: float32 stays, the rest become float64

    @property
    def feature_names(self) -> list[str]:
        return [f"x{i}" for i in range(self.n_columns)]


def plan_npy(stream: BinaryIO) -> tuple[NpyPlan, np.ndarray]:
    """The array, memory-mapped when the upload is a file on disk (read lazily, block by
    block), else loaded; refused from its header alone when it cannot be a table."""
    shape, fortran, dtype = _check_header(stream)
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) != 2:
        raise InvalidInput(f"the NPY array has shape {shape}; expected (n_items, n_features)")
    require_nonempty_shape(shape[0], shape[1])
    offset = stream.tell()
    try:
        stream.fileno()  # a spooled upload rolls over to its temporary file here
        array: np.ndarray = np.memmap(
            stream, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C"
        )
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        stream.seek(offset)
        count = math.prod(shape)
        array = np.frombuffer(stream.read(count * dtype.itemsize), dtype=dtype, count=count)
        array = array.reshape(shape, order="F" if fortran else "C")
    stored = "float32" if dtype == np.float32 else "float64"
    return NpyPlan(shape[0], shape[1], stored), array


def npy_blocks(array: np.ndarray, plan: NpyPlan, rows: int) -> Iterator[np.ndarray]:
    for start in range(0, plan.n_rows, rows):
        yield np.ascontiguousarray(array[start : start + rows], dtype=plan.dtype)
