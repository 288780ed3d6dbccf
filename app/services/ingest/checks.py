"""Checks shared by every table format: finiteness, shape, ground-truth encoding."""

import numpy as np
from numpy.typing import NDArray

from app.services.errors import InvalidInput


def require_nonempty_shape(n_rows: int, n_columns: int) -> None:
    if n_rows == 0:
        raise InvalidInput("the table has no rows")
    if n_columns == 0:
        raise InvalidInput("the table has no feature columns")


def encode_classes(values: list[str]) -> tuple[NDArray[np.int32], list[str]]:
    """Class names to int32 codes. Empty cells mean "unknown" and get -1.

    Numeric class names sort by value (2 before 10), others alphabetically.
    """
    present = sorted({v for v in values if v != ""}, key=class_sort_key)
    code_of = {name: code for code, name in enumerate(present)}
    codes = np.fromiter((code_of.get(v, -1) for v in values), dtype=np.int32, count=len(values))
    return codes, present


def class_sort_key(name: str) -> tuple[int, float, str]:
    try:
        return (0, float(name), name)
    except ValueError:
        return (1, 0.0, name)
