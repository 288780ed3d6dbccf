"""The server warms the numba kernels in the background at start-up (inline executor), so the
first run does not pay for loading them; a failed warm-up is logged and changes nothing else."""

from __future__ import annotations

import logging
import threading

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.config import Settings
from app.jobs import warm_cache
from app.main import create_app


@pytest.fixture
def warm_settings(db_engine: Engine, settings: Settings) -> Settings:
    return settings.model_copy(update={"warm_kernels_on_start": True})


def test_start_up_warms_the_kernels_in_a_daemon_thread(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted = threading.Event()
    monkeypatch.setattr(warm_cache, "warm_numba_cache", lambda: fitted.set() or {"cec": 0.1})
    app = create_app(warm_settings)
    with TestClient(app) as client:
        assert client.get("/api/v1/health").status_code == 200
        thread = app.state.kernel_warmup
        assert thread.daemon and thread.name == "warm-kernels"
        assert fitted.wait(timeout=10)


def test_no_warm_up_when_switched_off(
    db_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_cache, "warm_numba_cache", lambda: pytest.fail("warmed"))
    assert settings.warm_kernels_on_start is False  # tests/conftest.py switches it off
    app = create_app(settings)
    with TestClient(app):
        assert not hasattr(app.state, "kernel_warmup")


def test_a_failed_warm_up_is_logged_and_the_server_serves(
    warm_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> dict[str, float]:
        raise RuntimeError("no kernels today")

    monkeypatch.setattr(warm_cache, "warm_numba_cache", broken)
    app = create_app(warm_settings)
    with caplog.at_level(logging.ERROR, logger="app.jobs.warm_cache"), TestClient(app) as client:
        app.state.kernel_warmup.join(timeout=10)
        assert client.get("/api/v1/health").status_code == 200
    assert "warming the numba kernels failed" in caplog.text


def test_the_warm_up_fits_every_algorithm() -> None:
    seconds = warm_cache.warm_numba_cache()
    from app.jobs.algorithms import ALGORITHMS

    assert set(seconds) == set(ALGORITHMS)
