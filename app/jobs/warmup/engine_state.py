"""Which methods' numba kernels are ready, which a warm-up is compiling, and whether runs fit.

numba compiles a kernel on its first call (tens of seconds for a method's kernels on a cold
cache) and loads it from NUMBA_CACHE_DIR after that. The server's warm-up (`warm_cache.py`)
compiles each method in a child process, two at a time, and this process loads the results
from the cache. Until a method is ready, a run of it says `stage: preparing` (the page shows
"preparing the engine" instead of a bar stuck at sweep 0) and waits for the child compiling
it: compiling it here as well would only halve the speed of both on a 2-core machine. The
warm-up takes the methods that runs wait for first, and starts no other while runs fit."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Condition()
# Runs fit in this process (the inline executor): only then does it know what is ready.
_tracking = False
_warming = False  # a warm-up is compiling methods in child processes
_ready: set[str] = set()
_compiling: set[str] = set()
_given_up: set[str] = set()  # the warm-up failed for these: runs compile them themselves
_fitting = 0
_wanted: list[str] = []

# A run waits at most this long for the warm-up's child (then it compiles by itself).
WAIT_FOR_WARM_UP_S = 600.0


def track() -> None:
    """Runs fit in this process from now on (the inline executor)."""
    global _tracking
    with _lock:
        _tracking = True


def mark_ready(algorithm_id: str) -> None:
    with _lock:
        _ready.add(algorithm_id)
        _lock.notify_all()


def is_ready(algorithm_id: str) -> bool:
    """Whether the method's kernels are compiled (in the cache, or fitted here); always True
    when runs fit elsewhere (then this process cannot tell)."""
    with _lock:
        return not _tracking or algorithm_id in _ready


@contextmanager
def warming() -> Iterator[None]:
    """Around a warm-up: runs of methods not ready yet wait for it."""
    global _warming
    with _lock:
        _warming = True
    try:
        yield
    finally:
        with _lock:
            _warming = False
            _lock.notify_all()


def start_compiling(algorithm_id: str) -> None:
    with _lock:
        _compiling.add(algorithm_id)


def finish_compiling(algorithm_id: str, ok: bool) -> None:
    with _lock:
        _compiling.discard(algorithm_id)
        (_ready if ok else _given_up).add(algorithm_id)
        _lock.notify_all()


@contextmanager
def fitting(algorithm_id: str) -> Iterator[None]:
    """Around a run's fit: while a warm-up runs and the method is not ready, ask for it first
    and wait for it; the warm-up starts nothing new meanwhile; the method is ready after."""
    global _fitting
    with _lock:
        _fitting += 1
        if algorithm_id not in _ready and algorithm_id not in _wanted:
            _wanted.append(algorithm_id)
        _lock.notify_all()
        _lock.wait_for(
            lambda: not _warming or algorithm_id in _ready or algorithm_id in _given_up,
            WAIT_FOR_WARM_UP_S,
        )
    try:
        yield
        mark_ready(algorithm_id)
    finally:
        with _lock:
            _fitting -= 1
            _lock.notify_all()


def runs_waiting_for() -> list[str]:
    """Methods runs are fitting or waiting for that are not ready, first asked first."""
    with _lock:
        return [a for a in _wanted if a not in _ready and a not in _given_up]


def idle() -> bool:
    """No run is fitting."""
    with _lock:
        return _fitting == 0


def wait_for_change(timeout: float) -> None:
    """Sleep until something here changes (a run starts or ends, a method is ready)."""
    with _lock:
        _lock.wait(timeout)


def wake() -> None:
    """Wake ``wait_for_change`` sleepers (a warm-up told to stop)."""
    with _lock:
        _lock.notify_all()


def reset(*, tracking: bool = False) -> None:
    """Forget everything (tests)."""
    global _fitting, _tracking, _warming
    with _lock:
        _tracking = tracking
        _warming = False
        _ready.clear()
        _compiling.clear()
        _given_up.clear()
        _wanted.clear()
        _fitting = 0
