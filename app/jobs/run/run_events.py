"""Wake progress streams when a run changes, instead of each stream polling the database.

Runner threads call `publish(run_id)` after every write to a run; a progress stream (a coroutine
on the server's event loop) holds a `Subscription` and awaits it, holding no thread and no
database connection while it waits. Streams of one run share one read of its row per change
(`RunEvents.state`), so a thousand viewers of a run cost one query per progress write.

At shutdown `close_all_streams` wakes every stream to send a closing event and end: a stopping
server would otherwise wait for each run to finish, then cut the streams without a word.
"""

import asyncio
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

State = dict[str, Any] | None


class Subscription:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def wake(self) -> None:  # any thread
        self.loop.call_soon_threadsafe(self.event.set)

    async def wait(self, timeout: float) -> None:
        """Until the run changes or `timeout` passes. Cleared after waking, before the caller
        reads the run, so a change during that read wakes the next wait: none is lost."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self.event.wait(), timeout)
        self.event.clear()


class RunEvents:
    def __init__(self) -> None:
        self.closing = False  # the server is stopping: streams send their last event and end
        _HUBS.add(self)
        self._lock = threading.Lock()
        self._subscribers: dict[int, set[Subscription]] = {}
        self._versions: dict[int, int] = {}
        # run id -> (version read, when, state); one lock per run so one stream reads for all
        self._cache: dict[int, tuple[int, float, State]] = {}
        self._read_locks: dict[int, asyncio.Lock] = {}

    def publish(self, run_id: int) -> None:
        """The run's row changed (called from any thread)."""
        with self._lock:
            self._versions[run_id] = self._versions.get(run_id, 0) + 1
            subscribers = list(self._subscribers.get(run_id, ()))
        for subscription in subscribers:
            subscription.wake()

    def close(self) -> None:
        """Wake every stream, once and for all: `closing` tells them to end."""
        with self._lock:
            self.closing = True
            subscribers = [s for group in self._subscribers.values() for s in group]
        for subscription in subscribers:
            subscription.wake()

    @contextmanager
    def subscribe(self, run_id: int) -> Iterator[Subscription]:
        subscription = Subscription()
        with self._lock:
            self._subscribers.setdefault(run_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            with self._lock:
                remaining = self._subscribers.get(run_id, set())
                remaining.discard(subscription)
                if not remaining:
                    self._subscribers.pop(run_id, None)
                    self._versions.pop(run_id, None)
                    self._cache.pop(run_id, None)
                    self._read_locks.pop(run_id, None)

    async def state(
        self, run_id: int, read: Callable[[], Awaitable[State]], max_age: float
    ) -> State:
        """The run's state, read once per published change (and at least every `max_age`
        seconds, for changes nobody publishes, e.g. from Dask workers), shared by its streams."""
        lock = self._read_locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            with self._lock:
                version = self._versions.get(run_id, 0)
            cached = self._cache.get(run_id)
            now = time.monotonic()
            if cached is not None and cached[0] == version and now - cached[1] < max_age:
                return cached[2]
            state = await read()
            self._cache[run_id] = (version, now, state)
            return state


_HUBS: "weakref.WeakSet[RunEvents]" = weakref.WeakSet()


def close_all_streams() -> None:
    """The server is stopping (called before it waits for open connections to end)."""
    for hub in list(_HUBS):
        hub.close()
