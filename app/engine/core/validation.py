"""Input and parameter checks shared by the engine estimators; every failure is a ValueError.

Messages name the offending argument and, where it helps, say what to change (STYLE.md 12).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from app.engine.arrays import IntArray

UNLABELED = -1


def check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; bools and non-integral numbers are rejected."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    result = int(value)
    if result < low or (high is not None and result > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bound}, got {result}")
    return result


def check_real(
    name: str, value: object, low: float, high: float | None = None, high_open: bool = False
) -> float:
    """``value`` as a finite float in [low, high] (or [low, high) with ``high_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    result = float(value)
    too_high = high is not None and (result >= high if high_open else result > high)
    if not math.isfinite(result) or result < low or too_high:
        closing = ")" if high_open else "]"
        bound = f">= {low}" if high is None else f"in [{low}, {high}{closing}"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return result


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_partial_labels(y: ArrayLike | None, n_samples: int) -> tuple[IntArray, int]:
    """Category codes 0..m-1 for labeled points and -1 for unlabeled ones, plus m.

    ``y`` holds integer labels, with -1 meaning unlabeled (DESIGN.md Sec. 5); ``None`` means no
    point is labeled. Integral floats (1.0) are accepted; anything else non-integer is not.
    """
    if y is None:
        return np.full(n_samples, UNLABELED, dtype=np.int64), 0
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"y has {arr.shape[0]} labels but X has {n_samples} samples; they must match"
        )
    if arr.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in arr
    ):
        arr = arr.astype(np.float64)
    if arr.dtype.kind in "iu":
        labels = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        integral = np.isfinite(arr) & (arr == np.round(arr))
        if not np.all(integral):
            raise ValueError(
                "Unknown label type: labels in y must be integers (-1 for unlabeled), "
                f"found the value {arr[~integral][0]!r}"
            )
        labels = arr.astype(np.int64)
    else:
        raise ValueError(
            "Unknown label type: labels in y must be integers (-1 for unlabeled), got an "
            f"array of dtype {arr.dtype}"
        )
    if np.any(labels < UNLABELED):
        raise ValueError(
            f"labels in y must be >= 0, or -1 for unlabeled; found {int(labels.min())}"
        )
    labeled = labels != UNLABELED
    classes, codes = np.unique(labels[labeled], return_inverse=True)
    categories = np.full(n_samples, UNLABELED, dtype=np.int64)
    categories[labeled] = codes
    return categories, int(classes.shape[0])
