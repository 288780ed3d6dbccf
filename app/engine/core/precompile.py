"""Compile kernels for the argument types a CEC fit passes them, without running them.

Numba compiles one function at a time per process, and a cold CEC-IB fit spends most of its
15 s of compilation in two kernels: ``dissolve_invalid`` (reached first, right after the
start's statistics) and ``hartigan_sweep`` (reached last). A helper process compiles the sweep
into numba's cache while the process fitting compiles the start and the removals, so the fit
finds the sweep cached when it gets there (`app/jobs/warmup/warm_cache.py`; measured cold, two free
cores: 17.3 s for the fitting process when the helper went leaves first, 12 s this way).
The types come from the parameters' names, which the CEC kernels use consistently; a test checks
that each signature built here is the one a real fit compiles.
"""

import inspect
from typing import Any

import numba
import numpy as np

from app.engine.core import hartigan, seeding
from app.engine.core.cec_state import new_state

_n, _d, _k = 2, 2, 2
# One value per parameter name: only its numba type matters.
_EXAMPLES: dict[str, Any] = {
    "X": np.zeros((_n, _d)),
    "x": np.zeros(_d),
    "assign": np.zeros(_n, dtype=np.int64),
    "categories": np.zeros(_n, dtype=np.int64),
    "state": new_state(_k, _d, 1),
    "clock": hartigan.new_clock(_n, _k),
    **dict.fromkeys(("i", "c", "a", "since", "category", "family"), 0),
    **dict.fromkeys(("n_total", "beta", "min_size", "tol"), 0.0),
    **dict.fromkeys(("work", "delta", "u"), np.zeros(3 * _d)),
    "uniforms": np.zeros((_k, 2)),
    "seeds": np.zeros(_k, dtype=np.int64),
}

# What the fitting process reaches last, first: the sweep (its callees come with it), then the
# k-means++ start of a fit without labels (CEC-IB before any are given), which the warm-up fits
# second. A kernel compiled here after the fitting process got to it is compiled in vain.
SWEEP_KERNELS = (
    hartigan.hartigan_sweep,
    seeding.kmeanspp_seeds,
)
KERNEL_GROUPS = {"sweep": SWEEP_KERNELS}


def argument_types(kernel: Any) -> tuple[numba.types.Type, ...]:
    """The numba types a CEC fit calls ``kernel`` with, from its parameters' names."""
    names = inspect.signature(kernel.py_func).parameters
    return tuple(numba.typeof(_EXAMPLES[name]) for name in names)


def compile_group(name: str) -> None:
    """Compile the kernels of one group (a key of KERNEL_GROUPS) into this process and, as
    every kernel has ``cache=True``, into numba's cache."""
    if name not in KERNEL_GROUPS:
        raise ValueError(f"unknown kernel group {name!r}; known: {sorted(KERNEL_GROUPS)}")
    for kernel in KERNEL_GROUPS[name]:
        kernel.compile(argument_types(kernel))
