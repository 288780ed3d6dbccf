"""Tell the executor and the progress streams about run changes made by a request (a cancel, a
delete), not by a worker."""

from collections.abc import Iterable

from starlette.datastructures import State


def runs_changed(state: State, run_ids: Iterable[int], *, stop: bool) -> None:
    """Wake the runs' progress streams; with `stop`, also stop their workers at once (a deleted
    run's worker would otherwise notice only at its next progress write)."""
    for run_id in run_ids:
        if stop:
            state.executor.cancel(run_id)
        state.run_events.publish(run_id)
