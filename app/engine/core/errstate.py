"""The engine's own floating-point error handling, independent of the caller's global state.

Another library may call ``np.seterr(all="raise")`` (active-semi-supervised-clustering does on
import); the engine's numerics must not change with that. ``engine_errstate`` runs an estimator
entry point (fit, predict, ...) under NumPy's default handling, whatever the caller set, and
restores the caller's state on return: ``np.errstate`` is a context manager, so nothing leaks.
Underflow (exp of very negative log densities, tiny posteriors) is expected and harmless, so it
is ignored; divide, overflow and invalid keep NumPy's default warning, and code that expects
one of them (log 0 = -inf) says so locally with its own ``np.errstate``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

P = ParamSpec("P")
R = TypeVar("R")

# NumPy's defaults (np.geterr() in a fresh interpreter).
ENGINE_ERRSTATE: dict[str, str] = {
    "divide": "warn",
    "over": "warn",
    "under": "ignore",
    "invalid": "warn",
}


def engine_errstate(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` under ``ENGINE_ERRSTATE``; the signature is kept (``functools.wraps``),
    so scikit-learn's metadata routing still sees the keyword-only side information."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with np.errstate(**ENGINE_ERRSTATE):  # type: ignore[arg-type]
            return method(*args, **kwargs)

    return wrapper
