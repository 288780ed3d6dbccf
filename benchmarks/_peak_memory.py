"""A process's peak resident memory while something runs, sampled on a thread of its own."""

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psutil

T = TypeVar("T")


def with_peak_rss(pid: int, work: Callable[[], T], every_s: float = 0.01) -> tuple[T, float, int]:
    """What ``work()`` returned, the seconds it took, and how far the process ``pid``'s
    resident memory rose above its level before (its peak while ``work`` ran, in bytes)."""
    process = psutil.Process(pid)
    before = process.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(every_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    return result, time.perf_counter() - started, peak[0] - before
