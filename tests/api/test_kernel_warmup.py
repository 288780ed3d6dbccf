"""The server warms the numba kernels in the background at start-up (inline executor), so the
first run does not pay for loading them; a failed warm-up is logged and changes nothing else."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.config import Settings
from app.jobs import engine_state, warm_cache
from app.main import create_app


@pytest.fixture
def warm_settings(db_engine: Engine, settings: Settings) -> Settings:
    return settings.model_copy(update={"warm_kernels_on_start": True})


def test_start_up_warms_the_kernels_in_a_daemon_thread(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted = threading.Event()
    monkeypatch.setattr(warm_cache, "warm_numba_cache", lambda **_: fitted.set() or {"cec": 0.1})
    app = create_app(warm_settings)
    with TestClient(app) as client:
        assert client.get("/api/v1/health").status_code == 200
        thread = app.state.kernel_warmup
        assert thread.daemon and thread.name == "warm-kernels"
        assert fitted.wait(timeout=10)


def test_no_warm_up_when_switched_off(
    db_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_cache, "warm_numba_cache", lambda **_: pytest.fail("warmed"))
    assert settings.warm_kernels_on_start is False  # tests/conftest.py switches it off
    app = create_app(settings)
    with TestClient(app):
        assert not hasattr(app.state, "kernel_warmup")


def test_a_failed_warm_up_is_logged_and_the_server_serves(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(**_: object) -> dict[str, float]:
        raise RuntimeError("no kernels today")

    monkeypatch.setattr(warm_cache, "warm_numba_cache", broken)
    app = create_app(warm_settings)
    with caplog.at_level(logging.ERROR, logger="app.jobs.warm_cache"), TestClient(app) as client:
        app.state.kernel_warmup.join(timeout=10)
        assert client.get("/api/v1/health").status_code == 200
    assert "warming the numba kernels failed" in caplog.text


def test_the_warm_up_fits_every_algorithm() -> None:
    engine_state.reset(tracking=True)
    seconds = warm_cache.warm_numba_cache()
    from app.jobs.algorithms import ALGORITHMS

    assert set(seconds) == set(ALGORITHMS)
    assert list(seconds)[:2] == warm_cache.WARM_ORDER[:2]  # the table and image defaults first
    assert all(engine_state.is_ready(a) for a in ALGORITHMS)
    engine_state.reset()


def test_a_waiting_run_is_warmed_first_and_the_warm_up_steps_aside_while_runs_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run of SMIC fitting when the warm-up starts: the warm-up waits for it, then does not
    compile SMIC again (the run did), and compiles the others in its order."""
    engine_state.reset(tracking=True)
    fitted: list[str] = []
    monkeypatch.setattr(warm_cache, "_fit", lambda algorithm, *_: fitted.append(algorithm.id))
    run_done = threading.Event()

    def run() -> None:
        with engine_state.fitting("smic"):
            assert not engine_state.is_ready("smic")
            run_done.wait(timeout=10)

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(0.05)
    warm_up = threading.Thread(target=warm_cache.warm_numba_cache, kwargs={"courteous": True})
    warm_up.start()
    time.sleep(0.2)
    assert fitted == []  # waits while the run fits
    run_done.set()
    runner.join()
    warm_up.join(timeout=10)
    assert engine_state.is_ready("smic")
    assert fitted == [a for a in warm_cache.WARM_ORDER if a != "smic"]
    engine_state.reset()


def test_the_order_puts_a_wanted_method_first() -> None:
    engine_state.reset(tracking=True)
    with engine_state.fitting("c4s"):
        assert engine_state.next_to_warm(["cec-ib", "c4s"]) == "c4s"
    assert engine_state.next_to_warm(["cec-ib", "c4s"]) == "cec-ib"  # c4s is ready now
    engine_state.reset()
    assert engine_state.is_ready("anything")  # not tracking: runs fit elsewhere
