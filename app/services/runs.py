"""Run use cases: validate and queue a run (with its side information frozen), cancel, read."""

import pickle
from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.models import Dataset, Run, RunResult, User
from app.jobs.algorithms import ALGORITHMS, Algorithm, get_algorithm
from app.services.datasets import require_ready
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.image_apply import check_applicable
from app.services.imports import require_unchanged
from app.services.job_limits import ACTIVE_RUN_STATUSES, check_active_jobs
from app.services.paging import get_or_not_found, page
from app.services.side_information import compile_for_dataset
from app.store.dataset_arrays import is_slide, model_width
from app.store.run_arrays import labels_count, read_labels
from app.store.run_side_information import freeze

TERMINAL = ("succeeded", "failed", "cancelled")
ACTIVE = ACTIVE_RUN_STATUSES
# A client over the run limit may try again after this long (runs finish at their own pace).


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
        # Parameters are flat; a field that may be one of several types (n_neighbors: an int
        # or "auto") has one error per alternative, said together.
        by_field: dict[str, list[str]] = {}
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "params"
            by_field.setdefault(field, []).append(err["msg"])
        raise InvalidInput(
            "; ".join(
                f"params.{field}: {', or '.join(dict.fromkeys(messages))}"
                for field, messages in by_field.items()
            )
        ) from None
    if dataset.n_items < 2:
        raise InvalidInput(
            f"dataset {dataset.id} has {dataset.n_items} item(s); clustering needs at least 2"
        )
    problems = valid.data_problems(n_items=dataset.n_items, n_features=model_width(dataset))
    if problems:
        raise InvalidInput("; ".join(f"params.{problem}" for problem in problems))
    return valid


def start_run(
    *,
    session: Session,
    dataset: Dataset,
    user: User,
    algorithm_id: str,
    params: dict[str, Any],
    max_active: int | None = None,
    region: dict[str, int] | None = None,
) -> Run:
    """Validate, compile the side information at the current revision, and queue the run.
    ``region`` (x, y, width, height in level-0 pixels): a run on that region of a slide.

    A run on conflicting hard constraints that this algorithm uses is refused (409) with the
    conflict report; a user with `max_active` runs queued or running gets 429. Nothing is
    written then.
    """
    algorithm = _algorithm(algorithm_id)
    if region is not None:
        check_region(dataset, region)
    require_ready(dataset)
    require_unchanged(session, dataset)  # a dataset read in place: its source as imported
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
    if max_active is not None:
        check_active_jobs(session, user, max_active)
    run = Run(
        dataset_id=dataset.id,
        algorithm=algorithm.id,
        params=valid.model_dump(mode="json"),
        annotation_revision=info.revision,
        status="queued",
        side_information_hash=freeze(session=session, dataset_id=dataset.id, info=info),
        created_by_id=user.id,
        region=region,
    )
    session.add(run)
    session.flush()
    return run


def check_region(dataset: Dataset, region: dict[str, int]) -> None:
    """A region run is on a slide, inside it: else a 422 that says why."""
    if not is_slide(dataset):
        kind = "a table" if dataset.kind != "image" else "a picture decoded whole"
        raise InvalidInput(
            f"region: dataset {dataset.id} is {kind}, not a slide; a region run segments part "
            "of a slide (a run on anything else covers all of it: leave region out)"
        )
    image = dataset.meta["image"]
    width, height = int(image["width"]), int(image["height"])
    x, y = region["x"], region["y"]
    if x + region["width"] > width or y + region["height"] > height:
        raise InvalidInput(
            f"region: x {x} .. {x + region['width'] - 1}, y {y} .. "
            f"{y + region['height'] - 1} is not inside the slide ({width} x {height} pixels: "
            f"x 0 .. {width - 1}, y 0 .. {height - 1})"
        )


def get_run(*, session: Session, run_id: int) -> Run:
    return get_or_not_found(session, Run, run_id, "run")


def list_runs(
    *, session: Session, dataset: Dataset, limit: int, offset: int
) -> tuple[list[Run], int]:
    query = select(Run).where(Run.dataset_id == dataset.id)
    return page(session, query, Run.id.desc(), limit, offset)


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


def result_size(*, session: Session, result: RunResult) -> int:
    """How many items the result labels, without reading the labels."""
    size = labels_count(session=session, run_id=result.run_id)
    if size is None:  # a result row always has its labels beside it
        raise NotFound(f"run {result.run_id}'s labels are missing from the array store")
    return size


def result_labels(*, session: Session, result: RunResult) -> np.ndarray:
    labels = read_labels(session=session, run_id=result.run_id)
    if labels is None:  # a result row always has its labels beside it
        raise NotFound(f"run {result.run_id}'s labels are missing from the array store")
    return labels


def run_ids(*, session: Session, dataset_id: int) -> list[int]:
    """Every run of a dataset."""
    return list(session.scalars(select(Run.id).where(Run.dataset_id == dataset_id)))


def active_run_ids(
    *, session: Session, dataset_id: int | None = None, project_id: int | None = None
) -> list[int]:
    """Queued or running runs of a dataset, or of every dataset of a project: the runs a
    delete must stop."""
    query = select(Run.id).where(Run.status.in_(("queued", "running")))
    if dataset_id is not None:
        query = query.where(Run.dataset_id == dataset_id)
    if project_id is not None:
        query = query.where(
            Run.dataset_id.in_(select(Dataset.id).where(Dataset.project_id == project_id))
        )
    return list(session.scalars(query))


def start_apply(
    *,
    session: Session,
    source: Run,
    target: Dataset,
    user: User,
    max_active: int | None = None,
) -> Run:
    """Queue a run that segments `target` with `source`'s fitted model: the same recipe and
    fitted reduction featurize the new image, the method's own rule predicts, so cluster ids
    mean what they meant in `source`."""
    return start_apply_batch(
        session=session, source=source, targets=[target], user=user, max_active=max_active
    )[0]


def start_apply_batch(
    *,
    session: Session,
    source: Run,
    targets: list[Dataset],
    user: User,
    max_active: int | None = None,
) -> list[Run]:
    """One run per image of `targets`, all checked before any is queued (one bad image: a
    4xx and nothing queued). Each image's run counts toward the user's limit, as it does
    while it is queued; the fair queue runs them in turn with other users' work."""
    source_dataset = _applicable_source(session, source)
    for target in targets:
        if target.kind != "image":
            raise InvalidInput(f"dataset {target.id} is not an image; a model applies to images")
        check_applicable(source_dataset, target)
    if max_active is not None:
        what = f"applying run {source.id} to {len(targets)} images"
        check_active_jobs(session, user, max_active, adding=len(targets), what=what)
    queued = [
        Run(
            dataset_id=target.id,
            algorithm=source.algorithm,
            params=source.params,
            annotation_revision=target.revision,
            status="queued",
            source_run_id=source.id,
            created_by_id=user.id,
        )
        for target in targets
    ]
    session.add_all(queued)
    session.flush()
    return queued


def _applicable_source(session: Session, source: Run) -> Dataset:
    """The image a finished run with a predicting model was fitted on."""
    result = session.get(RunResult, source.id)
    if source.status != "succeeded" or result is None:
        raise Conflict(f"run {source.id} is {source.status}; only a finished run can be applied")
    if result.model is None:
        raise Conflict(f"run {source.id} kept no model (only runs on images do)")
    if not hasattr(pickle.loads(result.model), "predict"):
        raise Conflict(f"{source.algorithm} cannot predict new items; its runs cannot be applied")
    return session.get_one(Dataset, source.dataset_id)


def slide_of(*, session: Session, run: Run) -> Dataset | None:
    """The run's dataset when it is a slide (its mask is made as it is read), else None."""
    dataset = session.get(Dataset, run.dataset_id)
    return dataset if dataset is not None and is_slide(dataset) else None


def result_mask(*, session: Session, run: Run) -> bytes:
    result = get_result(session=session, run=run)
    if result.mask is None:
        raise Conflict(f"run {run.id} is on a table; only runs on images have a mask")
    return result.mask
