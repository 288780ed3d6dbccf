"""Warnings of one fit, kept on the estimator as well as raised.

A caller that runs several fits at once (the job runner's threads) reads each fit's own
warnings from ``estimator.fit_warnings_`` instead of catching warnings process-wide, which
would mix the warnings of fits running at the same time.
"""

import sys
import warnings
from typing import Any

# Frames of the engine's floating-point wrapper (core/errstate.py) sit between an estimator's
# method and its caller; a warning's location skips them so it still points at the user's line.
_WRAPPER_FILE = "errstate.py"


def reset_fit_warnings(estimator: Any) -> None:
    """Called at the start of every fit: a refit reports only its own warnings."""
    estimator.fit_warnings_ = []


def warn_fit(estimator: Any, message: str, category: type[Warning], *, stacklevel: int) -> None:
    """``warnings.warn`` (``stacklevel`` counted from the caller, as there) plus a record."""
    if not hasattr(estimator, "fit_warnings_"):
        reset_fit_warnings(estimator)
    estimator.fit_warnings_.append(message)
    warnings.warn(message, category, stacklevel=_past_wrappers(stacklevel) + 1)


def _past_wrappers(stacklevel: int) -> int:
    """``stacklevel`` (from warn_fit's caller) plus one for every wrapper frame on the way."""
    frame = sys._getframe(2)  # warn_fit's caller: stacklevel 1
    extra = 0
    for _ in range(stacklevel - 1):
        if frame.f_back is None:
            break
        frame = frame.f_back
        while frame.f_code.co_filename.endswith(_WRAPPER_FILE) and frame.f_back is not None:
            frame = frame.f_back
            extra += 1
    return stacklevel + extra
