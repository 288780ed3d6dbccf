"""What a parsed upload looks like, whatever file format it came from."""

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class ParsedTable:
    features: NDArray[np.floating]  # (n_items, n_features), all finite
    feature_names: list[str]
    item_ids: list[str] | None = None  # unique, from the id column
    ground_truth: NDArray[np.int32] | None = None  # class codes, -1 where the cell was empty
    ground_truth_classes: list[str] | None = None
    ignored_columns: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])


@dataclass(frozen=True)
class ParsedImage:
    data: bytes  # the file as uploaded
    format: str  # PNG, JPEG or TIFF
    width: int
    height: int
    mode: str  # RGB or L for a photo, else channels x dtype ("4 x uint16")
    dtype: str = "uint8"  # of the decoded pixels
    channel_names: list[str] = field(default_factory=list)  # measured channels; [] for a photo
    display: bytes | None = None  # a PNG the browser shows when the file itself will not do
    # What the browser shows, decoded (H x W or H x W x 3 uint8): the tiled viewer's pyramid
    # is made from it at upload. None: decoded again from the stored file when needed.
    shown: NDArray[np.uint8] | None = field(default=None, repr=False, compare=False)
