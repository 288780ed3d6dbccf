"""What every format's values must be, checked the same way whatever was read: finite numbers,
a refusal naming the object, the row (and the file's own row in a dataset of files) and the
column; and the float dtype a table is read as."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.store.sources.source_types import SourceError


def require_finite(
    out: np.ndarray, columns: Sequence[str], url: str, first: int, local: int, multi: bool
) -> None:
    finite = np.isfinite(out)
    if not finite.all():
        row, j = (int(i) for i in np.argwhere(~finite)[0])
        value = "NaN" if np.isnan(out[row, j]) else str(out[row, j])
        raise SourceError(
            f"{at(url, first + row, local + row, multi)}, column {columns[j]!r} is {value}: "
            "every feature must be a finite number"
        )


def at(url: str, row: int, local: int, multi: bool) -> str:
    where = f" (row {local} of this file)" if multi and local != row else ""
    return f"{url}: row {row}{where}"


def float_dtype(dtype: np.dtype) -> str:
    return "float32" if dtype == np.float32 else "float64"
