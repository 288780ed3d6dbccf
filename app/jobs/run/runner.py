"""Execute one run: claim it, fit, store the result. Every executor calls `execute_run`.

The runner opens its own short sessions (never the request's), writes progress at most four
times a second, and stops when asked (the cancel token in-process, the database flag from
anywhere) or when its run is gone (deleted with its dataset). A worker writes only to the run it
claimed: every write matches the run's `worker_key`, so a row it no longer owns is never touched.
Every exception becomes a `failed` run with a readable error, and the final write is retried,
so a run is never left `running` because one write failed.
"""

import logging
import math
import pickle
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app import __version__
from app.db.base import utcnow
from app.db.models import Dataset, Run, RunResult
from app.db.session import session_scope
from app.engine.image.pooled_apply import for_another_image
from app.jobs.results.continuation import warm_start_metrics
from app.jobs.results.fitted import Fitted, cluster_params, read_fitted
from app.jobs.run.chunked_result import LazyReference, chunked_result
from app.jobs.run.cluster_count import count_metrics, removal_warning
from app.jobs.run.data_parallel import cluster_client, fits_data_parallel
from app.jobs.run.image_runs import image_outputs
from app.jobs.run.memory_need import OutOfMemory, check_fits, this_worker
from app.jobs.run.metrics import run_metrics
from app.jobs.run.numbering import (
    Reference,
    latest_fitted_result,
    order_like,
    renumbered,
    renumbered_params,
)
from app.jobs.run.run_inputs import RunInputs, load_inputs
from app.jobs.warmup import engine_state
from app.store.dataset_arrays import model_width
from app.store.run_arrays import write_labels, write_labels_from_dask

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25  # at most 4 progress writes a second
ENGINE_VERSION = __version__  # recorded on every run
FINAL_WRITE_ATTEMPTS = 6  # backoff 0.5 s doubling: about 30 s of database trouble survived
GONE = "gone"  # the stop reason when the run's row was deleted (or claimed by another worker)

Notify = Callable[[int], None]


def _no_notify(_run_id: int) -> None:
    return None


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


class Claim:
    """The run this worker claimed and the key that every one of its writes must match;
    `attempt` counts the workers that started it, `previous_worker` is the one that died under
    it when this claim took the run over."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        run_id: int,
        key: str,
        notify: Notify,
        attempt: int = 1,
        previous_worker: str | None = None,
    ):
        self.factory = factory
        self.run_id = run_id
        self.key = key
        self.notify = notify
        self.attempt = attempt
        self.previous_worker = previous_worker

    def update(self, session: Session, **values: Any) -> bool:
        """Update the claimed run; False when it is no longer ours (deleted or reclaimed)."""
        result = session.execute(
            update(Run).where(Run.id == self.run_id, Run.worker_key == self.key).values(**values)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    def finish(self, status: str, error: str | None) -> None:
        """The run's final state, retried through transient database errors."""
        for attempt in range(FINAL_WRITE_ATTEMPTS):
            try:
                with session_scope(self.factory) as session:
                    self.update(session, status=status, error=error, finished_at=utcnow())
                self.notify(self.run_id)
                return
            except SQLAlchemyError:
                log.exception(
                    "run %s: could not record %s (attempt %d)", self.run_id, status, attempt
                )
                time.sleep(0.5 * 2**attempt)
        log.error(
            "run %s: left for start-up recovery; the database refused every write", self.run_id
        )


class ProgressRecorder:
    """The engine's `progress(iteration, cost)` callback for one run. The stored sweep (and the
    progress line's percentage, read from it) never goes back: a lower `iteration` than the one
    stored keeps the stored one (MostCoherentFit's candidates report as one fit, and a retried
    Dask task starts again from its first sweep on a row that shows further)."""

    def __init__(self, claim: Claim, token: CancelToken | None):
        self.claim = claim
        self.token = token
        self.history: list[float] = []
        self.stop_reason: str | None = None
        self._last_write = 0.0
        self._last_ask = 0.0
        # Candidate fits of one run may report from several threads (MostCoherentFit).
        self._lock = threading.Lock()

    def __call__(self, iteration: int, cost: float) -> bool:
        with self._lock:
            return self._record(iteration, cost)

    def _record(self, iteration: int, cost: float) -> bool:
        # A negative iteration (the engine's ASK_ONLY) only asks whether to go on, from work
        # before the fit proper (CEC-IB's labeled-weight search): no sweep to record or show.
        asking = iteration < 0
        if not asking:
            self.history.append(float(cost))
        if self.stop_reason is not None:  # told already (maybe through another candidate)
            return False
        if self.token is not None and self.token.is_set():
            self.stop_reason = self.token.reason
            return False
        # Questions and sweeps are throttled apart: a question just answered must not hold back
        # the first sweep's write (a short fit would then store no progress at all).
        now = time.monotonic()
        if now - (self._last_ask if asking else self._last_write) < PROGRESS_INTERVAL_S:
            return True
        if asking:
            self._last_ask = now
        else:
            self._last_write = now
        try:
            with session_scope(self.claim.factory) as session:
                ours = asking or self.claim.update(
                    session,
                    progress_iteration=_at_least_stored(int(iteration)),
                    progress_cost=float(cost) if math.isfinite(cost) else None,
                )
                row = session.execute(
                    select(Run.cancel_requested, Run.worker_key).where(Run.id == self.claim.run_id)
                ).first()
                ours = ours and row is not None and row.worker_key == self.claim.key
                cancel = row is not None and row.cancel_requested
        except SQLAlchemyError:
            log.warning("run %s: progress not recorded", self.claim.run_id, exc_info=True)
            return True  # progress is best effort; the final write is retried
        if not ours:
            self.stop_reason = GONE
            return False
        if not asking:
            self.claim.notify(self.claim.run_id)
        if cancel:
            self.stop_reason = "cancelled"
            return False
        return True


def _at_least_stored(iteration: int) -> Any:
    """`iteration`, or the run's stored progress_iteration where that is higher (in the
    UPDATE itself, so no write by any worker lowers it)."""
    return case(
        (Run.progress_iteration > iteration, Run.progress_iteration),
        else_=iteration,
    )


def new_worker_key() -> str:
    return uuid.uuid4().hex


def _claim(
    factory: sessionmaker[Session],
    run_id: int,
    key: str,
    notify: Notify,
    worker_address: str | None = None,
) -> Claim | None:
    """queued -> running, atomically: a run is executed at most once. A run already running
    under this very key is taken over: a Dask task (whose key is the claim's) is started again
    on another worker only when the first one died. A takeover counts an attempt more and keeps
    the run's `started_at` (the run started then, not now)."""
    with session_scope(factory) as session:
        before = session.execute(
            select(Run.status, Run.worker_address, Run.attempt).where(Run.id == run_id)
        ).first()
        first = Run.status == "queued"
        claimed = session.execute(
            update(Run)
            .where(
                Run.id == run_id,
                or_(first, and_(Run.status == "running", Run.worker_key == key)),
            )
            .values(
                status="running",
                started_at=case((first, utcnow()), else_=Run.started_at),
                attempt=case((first, 1), else_=func.coalesce(Run.attempt, 1) + 1),
                engine_version=ENGINE_VERSION,
                worker_key=key,
                worker_address=worker_address,
            )
        )
        if not claimed.rowcount or before is None:  # type: ignore[attr-defined]
            return None
    notify(run_id)
    if before.status == "queued":
        return Claim(factory, run_id, key, notify)
    return Claim(factory, run_id, key, notify, (before.attempt or 1) + 1, before.worker_address)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float as None: JSON has no inf or NaN, and PostgreSQL's
    JSON type refuses them (an empty cluster's energy is +inf, for example)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


# Given the worker that died under a run (its address), why it died when that is the run's
# failure (it ran out of memory), or None to start the run again.
WhyDied = Callable[[str | None], str | None]


def execute_run(
    factory: sessionmaker[Session],
    run_id: int,
    token: CancelToken | None = None,
    notify: Notify = _no_notify,
    key: str | None = None,
    data_parallel_from: int | None = None,
    worker_address: str | None = None,
    why_died: WhyDied | None = None,
) -> None:
    """`key` marks this worker's claim (pass one to be able to call `fail_abandoned`);
    `data_parallel_from`: on a Dask worker, tables of at least this many items fit
    data-parallel on the whole cluster (app/jobs/run/data_parallel.py); `why_died` is asked
    when this worker takes over a run whose worker died (a Dask task started again)."""
    claim = _claim(factory, run_id, key or new_worker_key(), notify, worker_address)
    if claim is None:
        return  # cancelled while queued, deleted, or already taken
    if claim.attempt > 1 and why_died is not None:
        reason = why_died(claim.previous_worker)
        if reason is not None:  # starting again from scratch would only die the same way
            log.warning("run %s: %s", run_id, reason)
            claim.finish("failed", reason)
            return
    try:
        _fit_and_store(claim, token, data_parallel_from)
    except OutOfMemory as exc:  # refused before reading anything: the estimate says why
        log.warning("run %s: %s", run_id, exc)
        claim.finish("failed", str(exc))
    except Exception as exc:  # every failure becomes a readable error on the run
        log.exception("run %s failed", run_id)
        claim.finish("failed", f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class _Loaded:
    inputs: RunInputs
    reference: Any  # the run this one's clusters are numbered like (numbering.py), or None
    seconds: float


@dataclass(frozen=True)
class _Outcome:
    fitted: Fitted
    order: NDArray[np.int64] | None  # the clusters' renumbering, applied to `fitted.labels`
    notes: tuple[str, ...]
    seconds: float


def _fit_and_store(claim: Claim, token: CancelToken | None, data_parallel_from: int | None) -> None:
    loaded = _load(claim, data_parallel_from)
    if loaded is None:
        return  # deleted between the claim and here
    progress = ProgressRecorder(claim, token)
    # A data-parallel run's whole result is made on the cluster: fit, measures, labels written.
    with _scheduler(loaded.inputs.data_parallel):
        outcome = _fit(loaded, progress)
        if progress.stop_reason == GONE:
            log.info("run %s was deleted while running; stopped", claim.run_id)
            return
        if progress.stop_reason is not None:
            reason = progress.stop_reason
            claim.finish(*(("cancelled", None) if reason == "cancelled" else ("failed", reason)))
            return
        if loaded.inputs.data_parallel:
            outcome, measured = _measured_on_the_cluster(loaded, outcome)
        else:
            measured = run_metrics(outcome.fitted.labels, loaded.inputs.info, loaded.inputs.truth)
        metrics = _metrics(loaded, outcome, measured)
        params = cluster_params(outcome.fitted.model)
        if outcome.order is not None:
            params = renumbered_params(params, outcome.order)
        mask = model = None
        if loaded.inputs.image is not None:
            layout = loaded.inputs.image
            mask, image_metrics = image_outputs(
                outcome.fitted.labels,
                layout.item_of_pixel,
                layout.pixel_truth,
                metrics.get("cluster_labels", []),
            )
            metrics.update(image_metrics)
            if loaded.inputs.model is None:
                model = _pickled(outcome.fitted.model)
        result = RunResult(
            run_id=claim.run_id,
            cluster_params=json_safe(params),
            cost_history=[c if math.isfinite(c) else None for c in progress.history],
            metrics=json_safe(metrics),
            model=model,
            mask=mask,
        )
        region = loaded.inputs.region
        labels = outcome.fitted.labels
        _store(claim, progress, labels if region is None else region.shown(labels), result)


def _measured_on_the_cluster(loaded: _Loaded, outcome: _Outcome) -> tuple[_Outcome, dict[str, Any]]:
    """A data-parallel fit's labels measured, renumbered and left to be written where they are
    (chunked_result.py)."""
    inputs = loaded.inputs
    assert inputs.chunked is not None
    made = chunked_result(outcome.fitted.labels, inputs.info, inputs.chunked)
    fitted = replace(outcome.fitted, labels=made.labels)
    return replace(outcome, fitted=fitted, order=made.order), made.metrics


def _load(claim: Claim, data_parallel_from: int | None) -> _Loaded | None:
    started = time.perf_counter()
    with session_scope(claim.factory) as session:
        run = session.get(Run, claim.run_id)
        if run is None or run.worker_key != claim.key:
            return None
        dataset = session.get(Dataset, run.dataset_id)
        assert dataset is not None
        _check_memory(run, dataset, data_parallel_from)
        inputs = load_inputs(session, run, dataset, data_parallel_from)
        reference: Reference | LazyReference | None = None
        if inputs.chunked is not None:  # its labels stay in the store, read chunk by chunk
            reference = inputs.chunked.reference
        elif inputs.model is None:
            reference = latest_fitted_result(session, run)
    return _Loaded(inputs, reference, time.perf_counter() - started)


def _check_memory(run: Run, dataset: Dataset, data_parallel_from: int | None) -> None:
    """OutOfMemory before anything is read, when the run cannot fit its Dask worker."""
    worker = this_worker()
    if worker is None or run.source_run_id is not None:
        return
    check_fits(
        dataset.n_items,
        model_width(dataset),
        data_parallel=fits_data_parallel(run.algorithm, dataset, data_parallel_from),
        worker=worker,
    )


def _fit(loaded: _Loaded, progress: ProgressRecorder) -> _Outcome:
    """The plan fitted (or another run's model applied), its clusters numbered like the
    reference run's."""
    started = time.perf_counter()
    inputs = loaded.inputs
    notes: tuple[str, ...] = ()
    if inputs.model is not None:  # apply another run's fitted model to a new image
        inputs.featurize_target()
        assert inputs.features is not None
        estimator = inputs.model
        if inputs.algorithm.pools_covariance_on_apply and inputs.image is not None:
            estimator = for_another_image(estimator)
        fitted = read_fitted(estimator, labels=estimator.predict(inputs.features))
        # The model's clusters carry the numbers they were stored under in its own run.
        order = inputs.source_cluster_order
    else:
        assert inputs.features is not None
        region = inputs.region  # a region of a slide: fitted on part, applied to the region
        features = inputs.features if region is None else inputs.features[region.fitted]
        info = inputs.info if region is None else inputs.info.subset(region.fitted)
        plan = inputs.algorithm.plan(
            inputs.params, info, features, progress, **inputs.plan_kwargs()
        )
        with engine_state.fitting(inputs.algorithm.id):
            plan.estimator.fit(features, **plan.fit_kwargs)
            fitted = read_fitted(plan.estimator, lazy=inputs.data_parallel)
            if region is not None:
                applied = fitted.model.predict(inputs.features[region.labelled])
                fitted = replace(fitted, labels=region.labels(fitted.labels, applied))
        notes = plan.notes
        # A data-parallel fit is numbered with its measures (`_measured_on_the_cluster`).
        order = None if inputs.data_parallel else order_like(fitted.labels, loaded.reference)
    if order is not None:
        fitted = replace(fitted, labels=renumbered(fitted.labels, order))
    return _Outcome(fitted, order, notes, time.perf_counter() - started)


def _metrics(loaded: _Loaded, outcome: _Outcome, measured: dict[str, Any]) -> dict[str, Any]:
    """``measured`` (the labels' measures) with what the fit and its inputs say."""
    inputs, fitted, notes = loaded.inputs, outcome.fitted, outcome.notes
    metrics = dict(measured)
    if fitted.choice is not None:
        metrics["choice"] = fitted.choice
    if inputs.model is None:
        metrics.update(warm_start_metrics(inputs.warm_start, inputs.previous, fitted.model))
    if inputs.source_cluster_labels is not None:
        metrics["cluster_labels"] = inputs.source_cluster_labels
    if loaded.reference is not None and outcome.order is not None:
        metrics["cluster_order"] = outcome.order.tolist()
        metrics["numbered_like_run"] = loaded.reference.run_id
    metrics["timings"] = {"load_s": loaded.seconds, "fit_s": outcome.seconds}
    if inputs.model_features:  # what the fit saw of a wide table
        metrics["model_features"] = inputs.model_features
    if inputs.region is not None:  # what a region run fitted on and labelled
        metrics["region"] = inputs.region.metrics()
    if inputs.data_parallel:  # what ran where: chunks, passes
        metrics["execution"] = fitted.execution
    if inputs.model is None:
        metrics["cluster_count"] = count_metrics(inputs.params, inputs.info, fitted.model)
        removal = removal_warning(fitted.model)
        notes = (*notes, removal) if removal else notes
    metrics["warnings"] = sorted(fitted.warnings | set(notes))
    return metrics


def _store(
    claim: Claim, progress: ProgressRecorder, labels: NDArray[np.int32], result: RunResult
) -> None:
    with session_scope(claim.factory) as session:
        # The labels first: the store write (seconds at 20M items) takes no database lock.
        if hasattr(labels, "dask"):  # a data-parallel fit's: written by the workers
            write_labels_from_dask(session=session, run_id=claim.run_id, labels=labels)
        else:
            write_labels(session=session, run_id=claim.run_id, labels=labels)
        ours = claim.update(
            session,
            status="succeeded",
            error=None,
            finished_at=utcnow(),
            progress_cost=_last(progress),
        )
        if not ours:
            session.rollback()  # deleted at the last moment: the labels written go again
            return
        session.add(result)
    claim.notify(claim.run_id)


def _scheduler(data_parallel: bool) -> AbstractContextManager[None]:
    """The Dask cluster as the scheduler of a data-parallel fit; nothing otherwise."""
    return cluster_client() if data_parallel else nullcontext()


def _pickled(estimator: Any) -> bytes:
    """The fitted estimator, for applying it to more images; its progress callback (bound to
    this run's database session factory) is not part of the model."""
    if hasattr(estimator, "progress"):
        estimator.progress = None
    return pickle.dumps(estimator, protocol=pickle.HIGHEST_PROTOCOL)


def _last(progress: ProgressRecorder) -> float | None:
    finite = [c for c in progress.history if math.isfinite(c)]
    return finite[-1] if finite else None


# Failing a run also drops its claim (worker_key), so a worker that is in fact still alive can
# write nothing more to it: a failed run never turns `succeeded` with its error still set.
def _failed(reason: str) -> dict[str, Any]:
    return {"status": "failed", "error": reason, "finished_at": utcnow(), "worker_key": None}


def fail_abandoned(factory: sessionmaker[Session], claims: dict[int, str], reason: str) -> None:
    """Mark runs failed that are still `running` under these claims (run id -> worker key):
    their workers are gone. A run claimed since by another worker is left alone."""
    with session_scope(factory) as session:
        for run_id, key in claims.items():
            session.execute(
                update(Run)
                .where(Run.id == run_id, Run.worker_key == key, Run.status == "running")
                .values(**_failed(reason))
            )


INTERRUPTED = "interrupted: the server stopped while this run was running"


def recover_interrupted_runs(factory: sessionmaker[Session], remote_prefix: str = "") -> list[int]:
    """At start-up: runs left `running` by a crash are failed as interrupted, except those
    whose claim key starts with `remote_prefix` (runs on remote workers, which outlive this
    process and are reconciled by their executor); queued runs are returned so the executor
    can pick them up again."""
    running = [Run.status == "running"]
    if remote_prefix:
        running.append(or_(Run.worker_key.is_(None), Run.worker_key.not_like(f"{remote_prefix}%")))
    with session_scope(factory) as session:
        session.execute(update(Run).where(*running).values(**_failed(INTERRUPTED)))
        return list(session.scalars(select(Run.id).where(Run.status == "queued").order_by(Run.id)))
