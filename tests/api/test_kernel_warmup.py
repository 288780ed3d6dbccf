"""The server warms the numba kernels in the background at start-up (inline executor), so the
first run does not pay for loading them; a failed warm-up is logged and changes nothing else."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.config import Settings
from app.jobs.warmup import engine_state, warm_cache, warm_children
from app.main import create_app


@pytest.fixture
def warm_settings(db_engine: Engine, settings: Settings) -> Settings:
    return settings.model_copy(update={"warm_kernels_on_start": True})


def test_start_up_warms_the_kernels_in_a_daemon_thread(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted = threading.Event()
    monkeypatch.setattr(
        warm_children, "warm_in_processes", lambda **_: fitted.set() or {"cec": 0.1}
    )
    app = create_app(warm_settings)
    with TestClient(app) as client:
        assert client.get("/api/v1/health").status_code == 200
        thread = app.state.kernel_warmup.thread
        assert thread.daemon and thread.name == "warm-kernels"
        assert fitted.wait(timeout=10)


def test_no_warm_up_when_switched_off(
    db_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_children, "warm_in_processes", lambda **_: pytest.fail("warmed"))
    assert settings.warm_kernels_on_start is False  # tests/conftest.py switches it off
    app = create_app(settings)
    with TestClient(app):
        assert not hasattr(app.state, "kernel_warmup")


def test_a_failed_warm_up_is_logged_and_the_server_serves(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(**_: object) -> dict[str, float]:
        raise RuntimeError("no kernels today")

    monkeypatch.setattr(warm_children, "warm_in_processes", broken)
    app = create_app(warm_settings)
    with (
        caplog.at_level(logging.ERROR, logger="app.jobs.warmup.warm_children"),
        TestClient(app) as client,
    ):
        app.state.kernel_warmup.thread.join(timeout=10)
        assert client.get("/api/v1/health").status_code == 200
    assert "warming the numba kernels failed" in caplog.text


def test_the_warm_up_fits_every_algorithm() -> None:
    engine_state.reset(tracking=True)
    seconds = warm_cache.warm_numba_cache()
    from app.jobs.algorithms import ALGORITHMS

    assert set(seconds) == set(ALGORITHMS)
    assert list(seconds) == warm_cache.warm_order()
    assert all(engine_state.is_ready(a) for a in ALGORITHMS)
    engine_state.reset()


class FakeChild:
    """A child process that ends when told to."""

    def __init__(self, algorithm_id: str, started: list[str]) -> None:
        started.append(algorithm_id)
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code

    def terminate(self) -> None:
        self.code = -15


def _warming_two(started: list[str], **options: Any) -> tuple[threading.Thread, float]:
    """The warm-up (`warm_in_processes(**options)`) in a thread, once `started` names two
    children (or after 10 s): the thread, and that 10 s deadline."""
    warm_up = threading.Thread(target=warm_children.warm_in_processes, kwargs=options)
    warm_up.start()
    deadline = time.monotonic() + 10
    while len(started) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return warm_up, deadline


def test_children_compile_two_at_a_time_and_a_waiting_run_goes_first() -> None:
    """The warm-up compiles in child processes, two at a time in WARM_ORDER, CEC-IB's kernel
    helper right after it; a run of a method not started yet makes it start at once (past the
    two) and waits for it, not compiling it a second time beside the child; the method is
    ready when its own child ends (a helper is never waited for)."""
    engine_state.reset(tracking=True)
    started: list[str] = []
    children: dict[str, FakeChild] = {}

    def launch(algorithm_id: str) -> FakeChild:
        children[algorithm_id] = FakeChild(algorithm_id, started)
        return children[algorithm_id]

    warm_up, deadline = _warming_two(started, launch=launch, courteous=True)
    helper = warm_children.HELPERS["cec-ib"]
    assert started == ["cec-ib", helper]

    waited = threading.Event()

    def run() -> None:
        with engine_state.fitting("smic"):  # blocks until smic's child has ended
            waited.set()

    runner = threading.Thread(target=run)
    runner.start()
    while "smic" not in started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started == ["cec-ib", helper, "smic"]  # past the two, at once
    time.sleep(0.2)
    assert not waited.is_set()  # the run waits for the child
    assert not engine_state.is_ready("smic")
    children["smic"].code = 0
    runner.join(timeout=10)
    assert waited.is_set() and engine_state.is_ready("smic")
    children[helper].code = 0
    assert not engine_state.is_ready("cec-ib")  # its helper ended, not its own child
    for algorithm_id in warm_children.WARM_ORDER:  # the others end; the rest start and end
        while algorithm_id not in children and time.monotonic() < deadline:
            time.sleep(0.01)
        children[algorithm_id].code = 0 if algorithm_id != "c4s" else 1
    warm_up.join(timeout=10)
    assert not warm_up.is_alive()
    assert sorted(started) == sorted([*warm_children.WARM_ORDER, helper])  # each compiled once
    assert not engine_state.is_ready("c4s")  # its child failed: a run compiles it itself
    with engine_state.fitting("c4s"):
        pass  # does not wait
    engine_state.reset()


def test_without_helpers_only_the_methods_compile_in_warm_order() -> None:
    """`workbench warm-cache` (no run waiting) leaves the helpers out: they only shorten a
    first run's wait, and compile again what their method's child compiles."""
    engine_state.reset(tracking=True)
    started: list[str] = []

    def launch(algorithm_id: str) -> FakeChild:
        child = FakeChild(algorithm_id, started)
        child.code = 0  # ends at once
        return child

    warm_children.warm_in_processes(launch=launch, helpers=False)
    assert started == warm_children.WARM_ORDER
    engine_state.reset()


def test_no_run_waits_without_a_warm_up() -> None:
    engine_state.reset(tracking=True)
    with engine_state.fitting("c3l"):
        assert not engine_state.is_ready("c3l")
    assert engine_state.is_ready("c3l")  # fitted here
    engine_state.reset()
    assert engine_state.is_ready("anything")  # not tracking: runs fit elsewhere


def test_the_cli_warms_one_method_in_a_child() -> None:
    """`workbench warm-cache --only cec` is what a warm-up child runs."""
    done = subprocess.run(
        [sys.executable, "-m", "app", "warm-cache", "--only", "cec"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "cec:" in done.stderr


def test_shutdown_terminates_the_children_and_starts_no_more() -> None:
    engine_state.reset(tracking=True)
    started: list[str] = []
    children: list[FakeChild] = []

    def launch(algorithm_id: str) -> FakeChild:
        children.append(FakeChild(algorithm_id, started))
        return children[-1]

    stop = threading.Event()
    warm_up, _ = _warming_two(started, launch=launch, stop=stop)
    stop.set()
    engine_state.wake()
    warm_up.join(timeout=10)
    assert not warm_up.is_alive()
    assert len(started) == 2 and all(child.code == -15 for child in children)
    assert not engine_state.is_ready("cec-ib")
    engine_state.reset()


def test_a_warm_up_child_dies_with_the_thread_that_started_it(tmp_path: Path) -> None:
    """kill -9 of the server ends its warm-up thread too: the child gets SIGTERM (Linux)."""
    if sys.platform != "linux":
        pytest.skip("prctl is Linux's")
    pid_file = tmp_path / "pid"
    code = (
        "import subprocess, sys, time\n"
        "from app.jobs.warmup.warm_children import _die_with_parent\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " preexec_fn=_die_with_parent)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    parent.kill()
    parent.wait()
    stat = Path(f"/proc/{child_pid}/stat")
    while time.monotonic() < deadline:
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return  # dead, not yet reaped by init
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.05)
    pytest.fail("the child outlived its parent")


def test_the_warm_up_order_names_every_algorithm_once() -> None:
    from app.jobs.algorithms import ALGORITHMS

    assert sorted(warm_children.WARM_ORDER) == sorted(ALGORITHMS)
