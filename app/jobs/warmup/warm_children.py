"""The server's warm-up: every method's numba kernels compiled in child processes
(``workbench warm-cache --only <id>``, see `warm_cache.py`), two at a time, into
NUMBA_CACHE_DIR, while this process serves and loads them from the cache when a run needs them.

Light on purpose (no estimator imports): `workbench serve` starts it before importing the app,
so the children gain the seconds the server spends starting."""

import ctypes
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

from app.jobs.warmup import engine_state

log = logging.getLogger(__name__)

# The order the warm-up compiles in: the table default first, then the longest compiles, so the
# two children end close together (cold, one process: cec-ib 17 s, c4s 31, c3l 13, ppc 5,
# cec 3 after cec-ib, smic 6; each child also spends about 4 s importing). A method a run
# waits for (the image page's PPC, say) starts at once, whatever its place here.
WARM_ORDER = ["cec-ib", "c4s", "c3l", "ppc", "cec", "smic"]
# Kernel groups (`app/engine/core/precompile.py`) a helper child compiles beside a method's own
# child, started right after it: numba compiles one function at a time, so a cold CEC-IB
# child takes 17 s alone, 12 s with the helper compiling its sweep on the other core.
HELPERS = {"cec-ib": "kernels:sweep"}
# Child processes compiling at once: numba compiles one function at a time per process, and a
# 2-core machine compiles two methods in about the time of the longer (bench_cold_start).
WARM_PROCESSES = 2


def warm_order() -> list[str]:
    """Every algorithm id (a test checks WARM_ORDER names them all), in compile order."""
    return list(WARM_ORDER)


def _jobs(helpers: bool) -> list[str]:
    """warm_order, with each method's helper right after it when ``helpers``."""
    return [
        job
        for a in warm_order()
        for job in (a, HELPERS.get(a) if helpers else None)
        if job is not None
    ]


def _is_helper(job: str) -> bool:
    return job.startswith("kernels:")


class Child(Protocol):
    def poll(self) -> int | None: ...

    def terminate(self) -> None: ...


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the thread that started it ends, so a server
    killed outright (kill -9) leaves no compiler running (Linux; elsewhere shutdown's stop)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


PR_SET_PDEATHSIG = 1


def _compile_in_child(job: str) -> Child:
    """``workbench warm-cache --only <id>`` (or ``--kernels <group>`` for a ``kernels:``
    helper) in a child process, with the same NUMBA_CACHE_DIR."""
    option = ["--kernels", job.split(":", 1)[1]] if _is_helper(job) else ["--only", job]
    return subprocess.Popen(
        [sys.executable, "-m", "app", "warm-cache", *option],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )


def warm_in_processes(
    processes: int = WARM_PROCESSES,
    *,
    courteous: bool = False,
    launch: Callable[[str], Child] = _compile_in_child,
    stop: threading.Event | None = None,
    helpers: bool = True,
) -> dict[str, float]:
    """Compile every method's kernels in child processes, ``processes`` at a time, into
    numba's cache; wall seconds per method (and helper). A method a run waits for starts first
    (even past ``processes``); with ``courteous`` no other starts while runs fit
    (engine_state). Only methods are tracked in engine_state: a run waits for its method's own
    child, which compiles whatever its helper has not cached yet. When ``stop`` is set, the
    children are terminated and nothing more starts (the server shutting down). Helpers cut
    the wait for a first run and cost CPU time compiling what their method's child would
    compile too: without a run waiting (`workbench warm-cache`, the Docker build) they are
    left out with ``helpers=False``."""
    pending = _jobs(helpers)
    running: dict[str, tuple[Child, float]] = {}
    seconds: dict[str, float] = {}
    with engine_state.warming():
        while pending or running:
            if stop is not None and stop.is_set():
                for child, _started in running.values():
                    child.terminate()
                log.info("warm-up stopped; %s not compiled", ", ".join([*running, *pending]))
                break
            waited = [a for a in engine_state.runs_waiting_for() if a in pending]
            free = processes - len(running)
            starting = waited or (
                pending[:free] if free > 0 and (not courteous or engine_state.idle()) else []
            )
            for job in starting:
                pending.remove(job)
                if not _is_helper(job):
                    engine_state.start_compiling(job)
                running[job] = (launch(job), time.perf_counter())
            for job, (child, started) in list(running.items()):
                code = child.poll()
                if code is None:
                    continue
                del running[job]
                if not _is_helper(job):
                    engine_state.finish_compiling(job, ok=code == 0)
                seconds[job] = time.perf_counter() - started
                log.info("%s: %.1f s%s", job, seconds[job],
                         "" if code == 0 else f" (failed: exit {code})")  # fmt: skip
            engine_state.wait_for_change(0.1)
    return seconds


def _warm_quietly(stop: threading.Event) -> None:
    try:
        started = time.perf_counter()
        warm_in_processes(courteous=True, stop=stop)
    except Exception:  # a failed warm-up costs the first run its compile time, nothing else
        log.exception("warming the numba kernels failed")
        return
    log.info("numba kernels warm after %.1f s", time.perf_counter() - started)


class BackgroundWarmUp:
    """``warm_in_processes`` in a daemon thread (it never delays start-up); ``stop`` ends it
    and its children (at shutdown: a stopped server leaves no compiler running)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.thread = threading.Thread(
            target=_warm_quietly, args=(self._stop,), name="warm-kernels", daemon=True
        )
        self.thread.start()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        engine_state.wake()
        self.thread.join(timeout)


_background: BackgroundWarmUp | None = None


def warm_in_background() -> BackgroundWarmUp:
    """The process's warm-up, started on the first call (`workbench serve` calls this before
    importing the app, the lifespan again); a stopped one is replaced."""
    global _background
    with _background_lock:
        if _background is None or _background.stopped:
            _background = BackgroundWarmUp()
        return _background


_background_lock = threading.Lock()
