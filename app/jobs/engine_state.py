"""Which methods' numba kernels this process has ready, and whether runs are fitting now.

numba compiles a kernel on its first call (tens of seconds for a method's kernels on a cold
cache) and loads it from NUMBA_CACHE_DIR after that. Until a method has fitted once in this
process, a run of it may wait on compilation: the run's `stage` says "preparing" then, so the
page shows "preparing the engine" instead of a bar stuck at sweep 0. The start-up warm-up
(`warm_cache.py`) marks each method ready as it goes, and steps aside while runs fit: numba
compiles one function at a time, so a warm-up compiling another method would make the waiting
run queue behind it."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Condition()
# Runs fit in this process (the inline executor): only then does it know what is ready.
_tracking = False
_ready: set[str] = set()
_fitting = 0
_wanted: list[str] = []


def mark_ready(algorithm_id: str) -> None:
    with _lock:
        _ready.add(algorithm_id)


def track() -> None:
    """Runs fit in this process from now on (the inline executor)."""
    global _tracking
    with _lock:
        _tracking = True


def is_ready(algorithm_id: str) -> bool:
    """Whether this process has fitted the method (always True when runs fit elsewhere: then
    this process cannot tell)."""
    with _lock:
        return not _tracking or algorithm_id in _ready


@contextmanager
def fitting(algorithm_id: str) -> Iterator[None]:
    """Around a run's fit: the warm-up waits meanwhile; the method is ready afterwards."""
    global _fitting
    with _lock:
        _fitting += 1
        if algorithm_id not in _ready and algorithm_id not in _wanted:
            _wanted.append(algorithm_id)
    try:
        yield
        mark_ready(algorithm_id)
    finally:
        with _lock:
            _fitting -= 1
            _lock.notify_all()


def wait_until_idle(timeout: float | None = None) -> bool:
    """Block while any run is fitting (the warm-up's courtesy); False on timeout."""
    with _lock:
        return _lock.wait_for(lambda: _fitting == 0, timeout)


def next_to_warm(order: list[str]) -> str | None:
    """The next method the warm-up should compile: one a run asked for first, else the next
    of ``order`` not ready yet."""
    with _lock:
        for algorithm_id in [*_wanted, *order]:
            if algorithm_id not in _ready:
                return algorithm_id
        return None


def reset(*, tracking: bool = False) -> None:
    """Forget everything (tests)."""
    global _fitting, _tracking
    with _lock:
        _tracking = tracking
        _ready.clear()
        _wanted.clear()
        _fitting = 0
