"""Execute one run: claim it, fit, store the result. Every executor calls `execute_run`.

The runner opens its own short sessions (never the request's), writes progress at most four
times a second, stops when asked (through the cancel token in-process, or the database flag
from anywhere), and turns every exception into a `failed` run with a readable error.
"""

import logging
import math
import threading
import time
from typing import Any

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.db.models import Dataset, Run, RunResult
from app.db.session import session_scope
from app.jobs.algorithms import get_algorithm
from app.jobs.metrics import run_metrics
from app.store.dataset_arrays import load_features, load_ground_truth
from app.store.side_information_blob import from_npz

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25  # at most 4 progress writes a second
ENGINE_VERSION = "0.1.0"


class CancelToken:
    """Set by the in-process executor to stop a run at its next progress call."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "cancelled"

    def set(self, reason: str = "cancelled") -> None:
        self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class ProgressRecorder:
    """The engine's `progress(iteration, cost)` callback for one run."""

    def __init__(self, factory: sessionmaker[Session], run_id: int, token: CancelToken | None):
        self.factory = factory
        self.run_id = run_id
        self.token = token
        self.history: list[float] = []
        self.stop_reason: str | None = None
        self._last_write = 0.0

    def __call__(self, iteration: int, cost: float) -> bool:
        self.history.append(float(cost))
        if self.token is not None and self.token.is_set():
            self.stop_reason = self.token.reason
            return False
        now = time.monotonic()
        if now - self._last_write < PROGRESS_INTERVAL_S:
            return True
        self._last_write = now
        with session_scope(self.factory) as session:
            session.execute(
                update(Run)
                .where(Run.id == self.run_id)
                .values(
                    progress_iteration=int(iteration),
                    progress_cost=float(cost) if math.isfinite(cost) else None,
                )
            )
            if session.scalar(select(Run.cancel_requested).where(Run.id == self.run_id)):
                self.stop_reason = "cancelled"
                return False
        return True


def _claim(factory: sessionmaker[Session], run_id: int) -> bool:
    """queued -> running, atomically: a run is executed at most once."""
    with session_scope(factory) as session:
        claimed = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "queued")
            .values(status="running", started_at=utcnow(), engine_version=ENGINE_VERSION)
        )
        return bool(claimed.rowcount)  # type: ignore[attr-defined]


def _finish(factory: sessionmaker[Session], run_id: int, status: str, error: str | None) -> None:
    with session_scope(factory) as session:
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status=status, error=error, finished_at=utcnow())
        )


def _cluster_params(estimator: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name in ("weights_", "means_"):
        value = getattr(estimator, name, None)
        if value is not None and np.size(value) <= 100_000:
            params[name.rstrip("_")] = np.asarray(value).tolist()
    for name in ("energy_", "n_iter_", "n_neighbors_", "smi_", "converged_"):
        value = getattr(estimator, name, None)
        if isinstance(value, (int, float, bool, np.integer, np.floating, np.bool_)):
            params[name.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return params


def execute_run(
    factory: sessionmaker[Session], run_id: int, token: CancelToken | None = None
) -> None:
    if not _claim(factory, run_id):
        return  # cancelled while queued, or already taken
    started = time.perf_counter()
    try:
        with session_scope(factory) as session:
            run = session.get(Run, run_id)
            assert run is not None and run.side_information is not None
            dataset = session.get(Dataset, run.dataset_id)
            assert dataset is not None
            features = load_features(session=session, dataset=dataset)
            truth = load_ground_truth(session=session, dataset=dataset)
            info = from_npz(run.side_information)
            algorithm = get_algorithm(run.algorithm)
            assert algorithm is not None, f"unknown algorithm {run.algorithm!r}"
            params = algorithm.params_model.model_validate(run.params)
        load_seconds = time.perf_counter() - started

        progress = ProgressRecorder(factory, run_id, token)
        plan = algorithm.plan(params, info, features, progress)
        fit_started = time.perf_counter()
        plan.estimator.fit(features, **plan.fit_kwargs)
        fit_seconds = time.perf_counter() - fit_started
        if progress.stop_reason is not None:
            _stopped(factory, run_id, progress.stop_reason)
            return

        labels = np.asarray(plan.estimator.labels_, dtype=np.int32)
        metrics = run_metrics(labels, info, truth)
        metrics["timings"] = {"load_s": load_seconds, "fit_s": fit_seconds}
        # Engine warnings (no convergence, tied eigenvalues) are shown with the result.
        # Read from the estimator, not caught process-wide: runs in other threads keep theirs.
        metrics["warnings"] = sorted(set(getattr(plan.estimator, "fit_warnings_", [])))
        with session_scope(factory) as session:
            session.add(
                RunResult(
                    run_id=run_id,
                    labels=labels.astype("<i4").tobytes(),
                    cluster_params=_cluster_params(plan.estimator),
                    cost_history=[c if math.isfinite(c) else None for c in progress.history],
                    metrics=metrics,
                )
            )
            session.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(status="succeeded", finished_at=utcnow(), progress_cost=_last(progress))
            )
    except Exception as exc:  # every failure becomes a readable error on the run
        log.exception("run %s failed", run_id)
        _finish(factory, run_id, "failed", f"{type(exc).__name__}: {exc}")


def _last(progress: ProgressRecorder) -> float | None:
    finite = [c for c in progress.history if math.isfinite(c)]
    return finite[-1] if finite else None


def _stopped(factory: sessionmaker[Session], run_id: int, reason: str) -> None:
    if reason == "cancelled":
        _finish(factory, run_id, "cancelled", None)
    else:
        _finish(factory, run_id, "failed", reason)


def recover_interrupted_runs(factory: sessionmaker[Session]) -> list[int]:
    """At start-up: runs left `running` by a crash are failed as interrupted; queued runs are
    returned so the executor can pick them up again."""
    with session_scope(factory) as session:
        session.execute(
            update(Run)
            .where(Run.status == "running")
            .values(
                status="failed",
                error="interrupted: the server stopped while this run was running",
                finished_at=utcnow(),
            )
        )
        return list(session.scalars(select(Run.id).where(Run.status == "queued").order_by(Run.id)))
