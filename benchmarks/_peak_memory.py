"""A process's peak resident memory while something runs, sampled on a thread of its own."""

import contextlib
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


class PeakRss:
    """Each named process's peak resident memory while the block runs (its children's
    included), sampled on a thread of its own: ``with PeakRss({"server": pid}) as peaks:``
    then ``peaks.bytes["server"]``."""

    def __init__(self, pids: dict[str, int], every_s: float = 0.05) -> None:
        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.bytes = dict.fromkeys(pids, 0)
        self.every_s = every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _tree_rss(self, process: psutil.Process) -> int:
        total = 0
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # gone meanwhile
                total += member.memory_info().rss
        return total

    def _sample(self) -> None:
        while not self._done.is_set():
            for name, process in self.processes.items():
                self.bytes[name] = max(self.bytes[name], self._tree_rss(process))
            time.sleep(self.every_s)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()
