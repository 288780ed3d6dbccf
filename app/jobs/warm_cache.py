"""Fit every algorithm once on a small table so numba compiles (and, with `cache=True` on every
kernel, writes to NUMBA_CACHE_DIR) what a first run would: the Docker image does it at build
time, so no container pays the cold compile (about 24 s) on its first run.

Each algorithm gets the side information it uses, drawn from iris's classes as a user would
give it; C3L gets its two categories."""

import logging
import threading
import time

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


# The order the warm-up compiles in: what a newcomer runs first (the table default, then the
# image default), then the rest. A run that waits goes first (engine_state.next_to_warm).
WARM_ORDER = ["cec-ib", "ppc", "cec", "c3l", "c4s", "smic"]


def warm_numba_cache(*, courteous: bool = False) -> dict[str, float]:
    """Seconds per algorithm (compile included on a cold cache). ``courteous``: wait while
    runs fit before each method (the server's warm-up; engine_state)."""
    iris = load_iris()
    features = np.ascontiguousarray(iris.data, dtype=np.float64)
    classes = [str(c) for c in iris.target_names]
    three = _side_information(iris.target.astype(np.int32), classes)
    two = _side_information((iris.target > 0).astype(np.int32), ["first", "other"])
    order = [*WARM_ORDER, *(a for a in ALGORITHMS if a not in WARM_ORDER)]
    seconds: dict[str, float] = {}
    while True:
        if courteous:
            engine_state.wait_until_idle()
        algorithm_id = engine_state.next_to_warm([a for a in order if a not in seconds])
        if algorithm_id is None or algorithm_id in seconds:
            return seconds
        started = time.perf_counter()
        info = two if algorithm_id == "c3l" else three
        _fit(ALGORITHMS[algorithm_id], features, info)
        engine_state.mark_ready(algorithm_id)
        seconds[algorithm_id] = time.perf_counter() - started
        log.info("%s: %.1f s", algorithm_id, seconds[algorithm_id])


def _warm_quietly() -> None:
    try:
        seconds = warm_numba_cache(courteous=True)
    except Exception:  # a failed warm-up costs the first run its compile time, nothing else
        log.exception("warming the numba kernels failed")
        return
    log.info("numba kernels warm after %.1f s", sum(seconds.values()))


def warm_in_background() -> threading.Thread:
    """Start ``warm_numba_cache`` in a daemon thread (it never delays start-up or shutdown)."""
    thread = threading.Thread(target=_warm_quietly, name="warm-kernels", daemon=True)
    thread.start()
    return thread
