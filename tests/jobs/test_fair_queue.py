"""Users take turns in the inline executor: FairQueue on its own (order, the per-owner cap,
closing), then the executor with jobs that block until the test lets them go."""

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.jobs.execute import executors
from app.jobs.execute.executors import InlineExecutor
from app.jobs.execute.fair_queue import FairQueue


def _drain(queue: FairQueue[str], n: int) -> list[tuple[int | None, str]]:
    """Take n jobs, marking each done at once (one worker)."""
    taken = []
    for _ in range(n):
        item = queue.get()
        assert item is not None
        taken.append(item)
        queue.done(item[0])
    return taken


def test_owners_take_turns_in_the_order_they_first_came() -> None:
    queue: FairQueue[str] = FairQueue(per_owner=1)
    for job in ("a1", "a2", "a3", "a4"):
        queue.put(1, job)
    queue.put(2, "b1")
    queue.put(None, "demo")
    queue.put(2, "b2")
    order = [job for _, job in _drain(queue, 7)]
    assert order == ["a1", "b1", "demo", "a2", "b2", "a3", "a4"]
    assert queue.waiting() == 0


def test_one_owner_never_holds_more_than_its_share_of_workers() -> None:
    queue: FairQueue[str] = FairQueue(per_owner=2)
    for i in range(5):
        queue.put(1, f"a{i}")
    first, second = queue.get(), queue.get()
    assert [first, second] == [(1, "a0"), (1, "a1")]
    # A third worker finds nothing it may start: it waits, and another owner's job gets it.
    got: list[Any] = []
    third = threading.Thread(target=lambda: got.append(queue.get()))
    third.start()
    third.join(0.2)
    assert third.is_alive() and got == []
    queue.put(2, "b0")
    third.join(5)
    assert got == [(2, "b0")]
    # One of the first owner's ends: its next job may start.
    queue.done(1)
    assert queue.get() == (1, "a2")


def test_closing_wakes_every_waiting_worker() -> None:
    queue: FairQueue[str] = FairQueue(per_owner=1)
    results: list[Any] = []
    workers = [threading.Thread(target=lambda: results.append(queue.get())) for _ in range(3)]
    for worker in workers:
        worker.start()
    time.sleep(0.05)
    queue.close()
    for worker in workers:
        worker.join(5)
    assert results == [None, None, None]
    with pytest.raises(ValueError, match="at least 1"):
        FairQueue(per_owner=0)


class _Gate:
    """Fake jobs: each records that it started and waits until released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.lock = threading.Lock()
        self.release: dict[str, threading.Event] = {}

    def job(self, name: str) -> None:
        with self.lock:
            self.started.append(name)
            event = self.release.setdefault(name, threading.Event())
        assert event.wait(10), f"{name} was never released"

    def let_go(self, name: str) -> None:
        with self.lock:
            self.release.setdefault(name, threading.Event()).set()

    def wait_started(self, count: int) -> list[str]:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.started) >= count:
                    return list(self.started)
            time.sleep(0.01)
        raise AssertionError(f"only {self.started} started")


def test_another_users_run_starts_at_once_behind_a_burst_of_featurizations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """User 1 queues six featurizations on three workers (two each at most); user 2's run
    takes the third worker at once instead of waiting for the six."""
    gate = _Gate()
    owners = {("featurize", d): 1 for d in range(6)} | {("run", 100): 2}
    monkeypatch.setattr(executors, "featurization_owner", lambda _f, d: owners["featurize", d])
    monkeypatch.setattr(executors, "run_owner", lambda _f, r: owners["run", r])
    monkeypatch.setattr(
        executors, "execute_featurization", lambda _f, d, *_a: gate.job(f"featurize-{d}")
    )
    run: Callable[..., None] = lambda _f, r, *_a, **_k: gate.job(f"run-{r}")  # noqa: E731
    monkeypatch.setattr(executors, "execute_run", run)
    monkeypatch.setattr(executors, "fail_abandoned", lambda *_a, **_k: None)
    factory: sessionmaker[Session] = sessionmaker()
    executor = InlineExecutor(factory, workers=3)
    try:
        assert executor.status()["workers_per_user"] == 2
        for dataset_id in range(6):
            executor.submit_featurization(dataset_id)
        assert gate.wait_started(2) == ["featurize-0", "featurize-1"]
        executor.submit(100)
        assert gate.wait_started(3)[2] == "run-100"
        gate.let_go("featurize-0")
        assert gate.wait_started(4)[3] == "featurize-2"
        assert executor.status()["waiting"] == 3
    finally:
        for name in [f"featurize-{d}" for d in range(6)] + ["run-100"]:
            gate.let_go(name)
        executor.shutdown()
