"""The engine's thread pool: results as submitted, errors handed to the caller, and a pool left
early neither runs its queued tasks nor keeps the process from ending."""

import threading

import pytest

from app.engine.core.daemon_pool import DaemonPool


def test_results_and_errors_come_back_through_the_futures() -> None:
    def square_or_fail(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x * x

    with DaemonPool(2) as pool:
        futures = [pool.submit(square_or_fail, x) for x in range(6)]
        assert [f.result() for f in futures if f is not futures[3]] == [0, 1, 4, 16, 25]
        with pytest.raises(ValueError, match="three"):
            futures[3].result()


def test_its_threads_are_daemons_and_end_when_it_is_left() -> None:
    with DaemonPool(3, "probe") as pool:
        names = {pool.submit(lambda: threading.current_thread().name).result() for _ in range(9)}
        daemons = [t for t in threading.enumerate() if t.name.startswith("probe-")]
    assert names <= {"probe-0", "probe-1", "probe-2"}
    assert daemons and all(t.daemon for t in daemons)
    assert not any(t.is_alive() for t in daemons)


def test_left_on_an_error_it_cancels_what_has_not_started_without_waiting() -> None:
    release = threading.Event()
    started: list[int] = []

    def task(k: int) -> int:
        started.append(k)
        release.wait(10)
        return k

    with pytest.raises(RuntimeError), DaemonPool(1) as pool:
        futures = [pool.submit(task, k) for k in range(4)]
        while not started:
            threading.Event().wait(0.01)
        raise RuntimeError("the job was cancelled")
    assert [f.cancelled() for f in futures] == [False, True, True, True]
    release.set()
    assert futures[0].result(timeout=10) == 0
    assert started == [0]
