"""Checks shared by every table format: finiteness, shape, ground-truth encoding."""

import numpy as np
from numpy.typing import NDArray

from app.services.errors import InvalidInput


def require_finite(features: NDArray[np.floating], feature_names: list[str]) -> None:
    finite = np.isfinite(features)
    if finite.all():
        return
    row, col = (int(v) for v in np.argwhere(~finite)[0])
    value = features[row, col]
    what = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    n_bad = int(finite.size - np.count_nonzero(finite))
    raise InvalidInput(
        f"{what} in column {feature_names[col]!r} at row {row + 1}; features must be finite "
        f"numbers ({n_bad} non-finite value{'s' if n_bad != 1 else ''} in all)"
    )


def require_computable(features: NDArray[np.floating], feature_names: list[str]) -> None:
    """Finite values whose spread overflows a 64-bit float (e.g. 1e308 and -1e308) break every
    statistic, view and fit made from them: refuse the column, naming it."""
    with np.errstate(over="ignore", invalid="ignore"):
        spread = np.std(features, axis=0, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(spread))
    if bad.size:
        raise InvalidInput(
            f"the values of column {feature_names[int(bad[0])]!r} are too large to compute with "
            "(their variance overflows a 64-bit float); rescale them"
        )


def require_nonempty_shape(n_rows: int, n_columns: int) -> None:
    if n_rows == 0:
        raise InvalidInput("the table has no rows")
    if n_columns == 0:
        raise InvalidInput("the table has no feature columns")


def encode_classes(values: list[str]) -> tuple[NDArray[np.int32], list[str]]:
    """Class names to int32 codes. Empty cells mean "unknown" and get -1.

    Numeric class names sort by value (2 before 10), others alphabetically.
    """
    present = sorted({v for v in values if v != ""}, key=_class_sort_key)
    code_of = {name: code for code, name in enumerate(present)}
    codes = np.fromiter((code_of.get(v, -1) for v in values), dtype=np.int32, count=len(values))
    return codes, present


def _class_sort_key(name: str) -> tuple[int, float, str]:
    try:
        return (0, float(name), name)
    except ValueError:
        return (1, 0.0, name)


def require_unique_ids(ids: list[str], column: str) -> None:
    first_row: dict[str, int] = {}
    for row, item_id in enumerate(ids, start=1):
        if item_id == "":
            raise InvalidInput(f"empty id in column {column!r} at row {row}")
        earlier = first_row.setdefault(item_id, row)
        if earlier != row:
            raise InvalidInput(
                f"duplicate id {item_id!r} in column {column!r} at rows {earlier} and {row}"
            )
