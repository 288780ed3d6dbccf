"""Fit every algorithm once on a small table so numba compiles (and, with `cache=True` on every
kernel, writes to NUMBA_CACHE_DIR) what a first run would: the server at start-up, in child
processes two at a time (`warm_in_processes`), and the Docker image at build time, so no
container pays the cold compile on its first run.

Each algorithm gets the side information it uses, drawn from iris's classes as a user would
give it; C3L gets its two categories."""

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np
from sklearn.datasets import load_iris

from app.jobs import engine_state
from app.jobs.algorithms import ALGORITHMS
from app.jobs.algorithms.base import Algorithm
from app.sideinfo.model import SideInformation

log = logging.getLogger(__name__)


def _side_information(labels: np.ndarray, names: list[str]) -> SideInformation:
    n = labels.size
    shown = np.full(n, -1, dtype=np.int32)
    picked = np.arange(0, n, 10)  # every tenth item labeled
    shown[picked] = labels[picked]
    by_class = [picked[labels[picked] == c] for c in range(len(names))]
    must = np.array([(g[0], g[1]) for g in by_class if g.size > 1], dtype=np.int64)
    cannot = np.array(
        [(a[0], b[0]) for i, a in enumerate(by_class) for b in by_class[i + 1 :]], dtype=np.int64
    )
    return SideInformation(
        n_items=n,
        revision=1,
        labels=shown,
        label_names=names,
        must_link=must.reshape(-1, 2),
        must_link_confidence=np.ones(len(must)),
        cannot_link=cannot.reshape(-1, 2),
        cannot_link_confidence=np.ones(len(cannot)),
    )


def _fit(algorithm: Algorithm, features: np.ndarray, info: SideInformation) -> None:
    params = algorithm.params_model.model_validate({})
    plan = algorithm.plan(params, info, features, lambda _iteration, _cost: True)
    plan.estimator.fit(features, **plan.fit_kwargs)


# The order the warm-up compiles in: the table default first, then the longest compiles, so the
# two children end close together (cold, one process: cec-ib 17 s, c4s 31, c3l 13, ppc 5,
# cec 3 after cec-ib, smic 6; each child also spends about 4 s importing). A method a run
# waits for (the image page's PPC, say) starts at once, whatever its place here.
WARM_ORDER = ["cec-ib", "c4s", "c3l", "ppc", "cec", "smic"]
# Child processes compiling at once: numba compiles one function at a time per process, and a
# 2-core machine compiles two methods in about the time of the longer (bench_cold_start).
WARM_PROCESSES = 2


def warm_order() -> list[str]:
    """Every algorithm id, in WARM_ORDER first."""
    return [*WARM_ORDER, *(a for a in ALGORITHMS if a not in WARM_ORDER)]


def warm_numba_cache(only: list[str] | None = None) -> dict[str, float]:
    """Fit each method (``only`` those) once in this process; seconds per method (compile
    included on a cold cache). Each is marked ready as it ends."""
    iris = load_iris()
    features = np.ascontiguousarray(iris.data, dtype=np.float64)
    classes = [str(c) for c in iris.target_names]
    three = _side_information(iris.target.astype(np.int32), classes)
    two = _side_information((iris.target > 0).astype(np.int32), ["first", "other"])
    seconds: dict[str, float] = {}
    for algorithm_id in only or warm_order():
        started = time.perf_counter()
        info = two if algorithm_id == "c3l" else three
        _fit(ALGORITHMS[algorithm_id], features, info)
        engine_state.mark_ready(algorithm_id)
        seconds[algorithm_id] = time.perf_counter() - started
        log.info("%s: %.1f s", algorithm_id, seconds[algorithm_id])
    return seconds


class Child(Protocol):
    def poll(self) -> int | None: ...


def _compile_in_child(algorithm_id: str) -> Child:
    """``workbench warm-cache --only <id>`` in a child process (same NUMBA_CACHE_DIR)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app", "warm-cache", "--only", algorithm_id],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def warm_in_processes(
    processes: int = WARM_PROCESSES,
    *,
    courteous: bool = False,
    launch: Callable[[str], Child] = _compile_in_child,
) -> dict[str, float]:
    """Compile every method's kernels in child processes, ``processes`` at a time, into
    numba's cache; wall seconds per method. A method a run waits for starts first (even past
    ``processes``); with ``courteous`` no other starts while runs fit (engine_state)."""
    pending = warm_order()
    running: dict[str, tuple[Child, float]] = {}
    seconds: dict[str, float] = {}
    with engine_state.warming():
        while pending or running:
            waited = [a for a in engine_state.runs_waiting_for() if a in pending]
            free = processes - len(running)
            starting = waited or (
                pending[:free] if free > 0 and (not courteous or engine_state.idle()) else []
            )
            for algorithm_id in starting:
                pending.remove(algorithm_id)
                engine_state.start_compiling(algorithm_id)
                running[algorithm_id] = (launch(algorithm_id), time.perf_counter())
            for algorithm_id, (child, started) in list(running.items()):
                code = child.poll()
                if code is None:
                    continue
                del running[algorithm_id]
                engine_state.finish_compiling(algorithm_id, ok=code == 0)
                seconds[algorithm_id] = time.perf_counter() - started
                log.info("%s: %.1f s%s", algorithm_id, seconds[algorithm_id],
                         "" if code == 0 else f" (failed: exit {code})")  # fmt: skip
            engine_state.wait_for_change(0.1)
    return seconds


def _warm_quietly() -> None:
    try:
        started = time.perf_counter()
        warm_in_processes(courteous=True)
    except Exception:  # a failed warm-up costs the first run its compile time, nothing else
        log.exception("warming the numba kernels failed")
        return
    log.info("numba kernels warm after %.1f s", time.perf_counter() - started)


def warm_in_background() -> threading.Thread:
    """Start ``warm_in_processes`` in a daemon thread (it never delays start-up or shutdown)."""
    thread = threading.Thread(target=_warm_quietly, name="warm-kernels", daemon=True)
    thread.start()
    return thread
