"""Run one measured call under a time limit, so a peer that would run for hours prints
"stopped" instead of holding the whole benchmark: in a forked child that is stopped (`within`,
for calls that stay inside C for long), or interrupted by an alarm (`interrupted_after`)."""

from __future__ import annotations

import multiprocessing
import resource
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Generic, TypeVar

T = TypeVar("T")


class Limited(Generic[T]):
    """seconds: wall time of the call (the limit if stopped); value: its result, None if
    stopped; peak_mib: the child's peak resident memory."""

    def __init__(self, seconds: float, value: T | None, peak_mib: float) -> None:
        self.seconds = seconds
        self.value = value
        self.peak_mib = peak_mib


def _call_in_child(
    call: Callable[[], T], pipe: Connection, warm: Callable[[], object] | None
) -> None:
    if warm is not None:
        warm()
    start = time.perf_counter()
    value = call()
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    pipe.send((seconds, value, peak_mib))


def within(
    call: Callable[[], T], limit: float, warm: Callable[[], object] | None = None
) -> Limited[T]:
    """`warm`, if given, runs in the child before the timed call (inside the limit, untimed):
    a fresh process pays first-call costs (numba's cache, lazy imports) that a running app
    has paid at start-up."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_call_in_child, args=(call, send, warm))
    child.start()
    if receive.poll(limit):
        seconds, value, peak_mib = receive.recv()
        child.join()
        return Limited(seconds, value, peak_mib)
    child.terminate()
    child.join()
    return Limited(limit, None, float("nan"))


class TimeLimitReached(Exception):
    pass


def _raise_limit(signum: int, frame: object) -> None:
    raise TimeLimitReached


def interrupted_after(call: Callable[[], T], limit: float) -> Limited[T]:
    """`within` for calls that return to Python often (pure Python or NumPy loops): an alarm
    in this process interrupts them, so no fork is needed. A fork would inherit numba's worker
    threads, which a forked child cannot use."""
    previous = signal.signal(signal.SIGALRM, _raise_limit)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    try:
        value = call()
    except TimeLimitReached:
        return Limited(limit, None, float("nan"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Limited(time.perf_counter() - start, value, peak_mib)
