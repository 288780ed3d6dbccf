"""Stream a chunked matrix as one NPY file without assembling it in memory."""

import io
from collections.abc import Iterable, Iterator

import numpy as np


def npy_stream(
    blocks: Iterable[np.ndarray], *, dtype: str, shape: tuple[int, ...]
) -> Iterator[bytes]:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header,
        {"descr": np.dtype(dtype).newbyteorder("<").str, "fortran_order": False, "shape": shape},
    )
    yield header.getvalue()
    for block in blocks:
        yield np.ascontiguousarray(block).tobytes()
