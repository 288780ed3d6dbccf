"""Run use cases: validate and queue a run (with its side information frozen), cancel, read."""

from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.models import Dataset, Run, RunResult, User
from app.jobs.algorithms import ALGORITHMS, Algorithm, get_algorithm
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.side_information import compile_for_dataset
from app.store import chunks, dataset_arrays
from app.store.side_information_blob import to_npz

TERMINAL = ("succeeded", "failed", "cancelled")


def _algorithm(algorithm_id: str) -> Algorithm:
    algorithm = get_algorithm(algorithm_id)
    if algorithm is None:
        raise InvalidInput(
            f"unknown algorithm {algorithm_id!r}; available: {', '.join(sorted(ALGORITHMS))}"
        )
    return algorithm


def validate_params(algorithm: Algorithm, params: dict[str, Any], dataset: Dataset) -> Any:
    try:
        valid = algorithm.params_model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"params.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidInput(problems) from None
    n_clusters = getattr(valid, "n_clusters", None)
    if n_clusters is not None and n_clusters > dataset.n_items:
        raise InvalidInput(
            f"params.n_clusters: {n_clusters} is more than the {dataset.n_items} items of "
            f"dataset {dataset.id}"
        )
    return valid


def start_run(
    *, session: Session, dataset: Dataset, user: User, algorithm_id: str, params: dict[str, Any]
) -> Run:
    """Validate, compile the side information at the current revision, and queue the run.

    A run on conflicting hard constraints that this algorithm uses is refused (409) with the
    conflict report; nothing is written then.
    """
    algorithm = _algorithm(algorithm_id)
    if dataset.kind != "table":
        raise InvalidInput(f"dataset {dataset.id} has no features yet; it cannot be clustered")
    valid = validate_params(algorithm, params, dataset)
    info = compile_for_dataset(session=session, dataset=dataset)
    missing = algorithm.requirement(info) if algorithm.requirement else None
    if missing:
        raise InvalidInput(missing)
    conflicts = algorithm.relevant_conflicts(info)
    if conflicts:
        raise Conflict(
            f"the annotations contradict each other ({len(conflicts)} conflict(s)); resolve "
            "them before running",
            conflicts=conflicts,
        )
    run = Run(
        dataset_id=dataset.id,
        algorithm=algorithm.id,
        params=valid.model_dump(mode="json"),
        annotation_revision=info.revision,
        status="queued",
        side_information=to_npz(info),
        created_by_id=user.id,
    )
    session.add(run)
    session.flush()
    return run


def get_run(*, session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id}")
    return run


def list_runs(
    *, session: Session, dataset: Dataset, limit: int, offset: int
) -> tuple[list[Run], int]:
    query = select(Run).where(Run.dataset_id == dataset.id)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(Run.id.desc()).limit(limit).offset(offset)).all()
    return list(rows), total


def request_cancel(*, session: Session, run: Run) -> Run:
    if run.status in TERMINAL:
        raise Conflict(f"run {run.id} has already finished ({run.status}); nothing to cancel")
    if run.status == "queued":
        run.status = "cancelled"
        run.finished_at = utcnow()
    run.cancel_requested = True
    session.flush()
    return run


def get_result(*, session: Session, run: Run) -> RunResult:
    result = session.get(RunResult, run.id)
    if result is None:
        raise Conflict(f"run {run.id} is {run.status}; it has no result")
    return result


def result_labels(result: RunResult) -> np.ndarray:
    return np.frombuffer(result.labels, dtype="<i4")


def item_ids(*, session: Session, dataset: Dataset) -> list[str]:
    if dataset.id_column:
        return chunks.read_strings(
            session=session, dataset_id=dataset.id, kind=dataset_arrays.ITEM_IDS
        )
    return [str(i) for i in range(dataset.n_items)]
