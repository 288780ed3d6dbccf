"""Fit every algorithm once on a small table so numba compiles (and, with `cache=True` on every
kernel, writes to NUMBA_CACHE_DIR) what a first run would: in the server's warm-up children
(`warm_children.py`) and the Docker image at build time, so no container pays the cold compile
on its first run.

Each algorithm gets the side information it uses, drawn from iris's classes as a user would
give it; C3L gets its two categories."""

import logging
import time

import numpy as np
from sklearn.datasets import load_iris

from app.jobs.algorithms import ALGORITHMS
from app.jobs.algorithms.base import Algorithm
from app.jobs.warmup import engine_state
from app.jobs.warmup.warm_children import warm_order
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


def _fit(
    algorithm: Algorithm,
    features: np.ndarray,
    info: SideInformation,
    given: dict[str, object] | None = None,
) -> None:
    params = algorithm.params_model.model_validate(given or {})
    plan = algorithm.plan(params, info, features, lambda _iteration, _cost: True)
    plan.estimator.fit(features, **plan.fit_kwargs)


# Methods a newcomer runs before giving any side information (the table page's default), which
# then starts from k-means++ instead of the labels: fitted that way too.
ALSO_WITHOUT_SIDE_INFO = ("cec-ib",)


def warm_numba_cache(only: list[str] | None = None) -> dict[str, float]:
    """Fit each method (``only`` those) once in this process; seconds per method (compile
    included on a cold cache). Each is marked ready as it ends."""
    iris = load_iris()
    features = np.ascontiguousarray(iris.data, dtype=np.float64)
    classes = [str(c) for c in iris.target_names]
    three = _side_information(iris.target.astype(np.int32), classes)
    two = _side_information((iris.target > 0).astype(np.int32), ["first", "other"])
    no_labels = np.full(iris.target.size, -1, dtype=np.int32)
    seconds: dict[str, float] = {}
    for algorithm_id in only or warm_order():
        started = time.perf_counter()
        info = two if algorithm_id == "c3l" else three
        _fit(ALGORITHMS[algorithm_id], features, info)
        if algorithm_id in ALSO_WITHOUT_SIDE_INFO:
            _fit(
                ALGORITHMS[algorithm_id],
                features,
                _side_information(no_labels, []),
                {"n_clusters": 3},
            )
        engine_state.mark_ready(algorithm_id)
        seconds[algorithm_id] = time.perf_counter() - started
        log.info("%s: %.1f s", algorithm_id, seconds[algorithm_id])
    return seconds
