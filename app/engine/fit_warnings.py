"""Warnings of one fit, kept on the estimator as well as raised.

A caller that runs several fits at once (the job runner's threads) reads each fit's own
warnings from ``estimator.fit_warnings_`` instead of catching warnings process-wide, which
would mix the warnings of fits running at the same time.
"""

import warnings
from typing import Any


def reset_fit_warnings(estimator: Any) -> None:
    """Called at the start of every fit: a refit reports only its own warnings."""
    estimator.fit_warnings_ = []


def warn_fit(estimator: Any, message: str, category: type[Warning], *, stacklevel: int) -> None:
    """``warnings.warn`` (``stacklevel`` counted from the caller, as there) plus a record."""
    if not hasattr(estimator, "fit_warnings_"):
        reset_fit_warnings(estimator)
    estimator.fit_warnings_.append(message)
    warnings.warn(message, category, stacklevel=stacklevel + 1)
