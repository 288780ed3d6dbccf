"""OME-TIFF files made in memory: channel planes with their names, as a microscope exports
them (the collection benchmark uploads these; the TIFF tests build theirs here too)."""

import io
from typing import Any

import numpy as np
import tifffile


def ome_tiff(
    planes: np.ndarray,
    names: list[str],
    axes: str = "CYX",
    compression: str | None = "zlib",
    **options: Any,
) -> bytes:
    """`planes` (laid out as `axes` says) as an OME-TIFF whose channels are called `names`;
    `options` go to `tifffile.imwrite` (a `tile` size, say)."""
    buffer = io.BytesIO()
    tifffile.imwrite(
        buffer,
        planes,
        ome=True,
        compression=compression,
        metadata={"axes": axes, "Channel": {"Name": names}},
        **options,
    )
    return buffer.getvalue()
