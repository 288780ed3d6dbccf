"""Tell the executor (and progress streams) about jobs a request has just committed: runs
cancelled or deleted, featurizations queued."""

from collections.abc import Iterable

from sqlalchemy.orm import Session
from starlette.datastructures import State

from app.db.models import Dataset
from app.services import datasets, runs


def runs_changed(state: State, run_ids: Iterable[int], *, stop: bool) -> None:
    """Wake the runs' progress streams; with `stop`, also stop their workers at once (a deleted
    run's worker would otherwise notice only at its next progress write)."""
    for run_id in run_ids:
        if stop:
            state.executor.cancel(run_id)
        state.run_events.publish(run_id)


def featurization_queued(state: State, dataset_id: int, status: str) -> None:
    """Submit a dataset's queued featurization (once its request has committed)."""
    if status == "featurizing":
        state.executor.submit_featurization(dataset_id)


def featurizations_queued(state: State, made: Iterable[Dataset]) -> None:
    """Submit the queued featurizations of many datasets at once (a collection's)."""
    state.executor.submit_featurizations([d.id for d in made if d.status == "featurizing"])


def delete_dataset_stopping_runs(state: State, session: Session, dataset: Dataset) -> None:
    """Delete a dataset with what was made from it, commit, and stop its queued and running
    runs (their workers would otherwise notice only at their next progress write)."""
    active = runs.active_run_ids(session=session, dataset_id=dataset.id)
    dataset_id, run_ids = dataset.id, runs.run_ids(session=session, dataset_id=dataset.id)
    datasets.delete_dataset(session=session, dataset=dataset)
    session.commit()
    runs_changed(state, active, stop=True)
    datasets.remove_deleted_directories(session=session, dataset_id=dataset_id, run_ids=run_ids)
