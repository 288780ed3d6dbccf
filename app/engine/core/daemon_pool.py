"""A thread pool whose threads never hold up the end of the process.

`concurrent.futures.ThreadPoolExecutor`'s threads are joined when the interpreter exits, and
each first works through every task still queued: a server stopping while a slide's blocks were
queued kept running for over 10 s after SIGTERM. The engine's parallel loops (blocks of a
picture, candidate fits) run here instead: on daemon threads, with the tasks not yet started
cancelled when the pool is left early (an error, a cancelled job).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")

_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool:
    """``submit(fn, *args)`` -> Future, run on ``max_workers`` daemon threads; a context
    manager. Leaving it normally waits for the threads (every task was awaited); leaving it
    on an error cancels what has not started and does not wait for what has."""

    def __init__(self, max_workers: int, name: str = "engine") -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
            for i in range(max(max_workers, 1))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._tasks.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while (task := self._tasks.get()) is not None:
            future, fn, args, kwargs = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever awaits the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True) -> None:
        """Cancel the tasks not started; stop the threads once they are idle."""
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
        for _ in self._threads:
            self._tasks.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def __enter__(self) -> DaemonPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.shutdown(wait=kind is None)
