"""Per-feature summary statistics shown on the dataset page, computed once at import."""

from typing import Any

import numpy as np
from numpy.typing import NDArray


def feature_statistics(features: NDArray[np.floating], names: list[str]) -> list[dict[str, Any]]:
    data = np.asarray(features, dtype=np.float64)
    quartiles = np.quantile(data, [0.25, 0.5, 0.75], axis=0)
    return [
        {
            "name": name,
            "min": float(data[:, j].min()),
            "q1": float(quartiles[0, j]),
            "median": float(quartiles[1, j]),
            "q3": float(quartiles[2, j]),
            "max": float(data[:, j].max()),
            "mean": float(data[:, j].mean()),
            "std": float(data[:, j].std()),
        }
        for j, name in enumerate(names)
    ]
