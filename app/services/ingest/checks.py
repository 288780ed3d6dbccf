"""Checks shared by every table format: finiteness, shape, ground-truth encoding, the label
column apart from the others."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.services.errors import InvalidInput


def require_nonempty_shape(n_rows: int, n_columns: int) -> None:
    if n_rows == 0:
        raise InvalidInput("the table has no rows")
    if n_columns == 0:
        raise InvalidInput("the table has no feature columns")


def require_label_apart(
    label_column: str | None, id_column: str | None, ground_truth_column: str | None
) -> None:
    """The label column is neither the id column nor the ground truth (in every table format,
    uploaded or imported by reference)."""
    if not label_column:
        return
    for parameter, other in (
        ("id_column", id_column),
        ("ground_truth_column", ground_truth_column),
    ):
        if label_column == other:
            raise InvalidInput(
                f"label_column {label_column!r} is also the {parameter}: the expert's labels "
                f"must be a column of their own"
            )


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


def arrow_floats(column: Any, name: str, first_row: int, dtype: str = "float64") -> NDArray:
    """An Arrow column of a feature as numbers; a missing cell (null) refused with its row."""
    if column.null_count:
        row = int(np.flatnonzero(np.asarray(column.is_null()))[0])
        raise InvalidInput(f"missing value in feature column {name!r} at row {first_row + row + 1}")
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)
