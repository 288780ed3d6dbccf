"""`workbench serve` holds BLAS to BLAS_THREADS threads: a server runs requests, runs and
featurizations side by side, where BLAS's own threads only spin-wait against them (a 1M x 20
CSV upload: 15 s with OpenBLAS's 2 threads, 8 s with 1, on 2 cores; benchmarks/bench_upload)."""

import sys

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import app.__main__ as cli
from app.config import get_settings


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.mark.parametrize("wanted", [1, 3])
def test_serve_limits_blas_threads_before_serving(
    monkeypatch: pytest.MonkeyPatch, wanted: int
) -> None:
    if not _blas_threads():
        pytest.skip("numpy links no BLAS that threadpoolctl can see")
    seen: list[list[int]] = []
    monkeypatch.setattr(cli._Server, "run", lambda self, sockets=None: seen.append(_blas_threads()))
    monkeypatch.setattr(sys, "argv", ["workbench", "serve"])
    monkeypatch.setenv("BLAS_THREADS", str(wanted))
    monkeypatch.setenv("WARM_KERNELS_ON_START", "false")
    get_settings.cache_clear()
    original = threadpool_limits(limits=None)  # today's limits, put back afterwards
    try:
        threadpool_limits(limits=2, user_api="blas")
        cli.main()
    finally:
        original.restore_original_limits()
        get_settings.cache_clear()
    assert seen == [[wanted] * len(_blas_threads())]


def test_blas_threads_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from app.config import Settings

    with pytest.raises(ValidationError, match="blas_threads"):
        Settings(blas_threads=0)
