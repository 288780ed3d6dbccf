"""What a parsed upload looks like, whatever file format it came from."""

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from app.engine.image.parsed_image import ParsedImage

__all__ = ["ParsedImage", "ParsedTable"]


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
