"""Whether a run fits the memory of the Dask worker that took it, asked before it reads data.

A worker past its memory limit is restarted by its nanny, and the scheduler starts the task
again on another worker, from scratch: a run too large for its workers used to die four times
over five minutes and then say only that its task was lost. A run now estimates what it will
hold before it loads anything, and fails at once with the estimate and the limit when that is
more than its worker has; a run whose worker died under it anyway learns why when it is taken
over (`dask_executor.killed_for_memory`).

The estimate counts the process as it is (the engine's libraries alone are about 400 MB; what
earlier tasks freed is handed back to the system first) plus
what the run adds: on the data-parallel path the side information kept per item, the worker's
share of the persisted labels and of the expert labels, a pass task's chunk and the start's
sample; in one task the features (float64), the fit's working copies and the labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.core.chunked_input import SAMPLE_ROWS
from app.jobs.run.data_parallel import ROWS_PER_TASK

GIB = 1024**3
# Bytes per item the run's process keeps of its side information (labels int32, and int16 as
# the engine sends them; chunklets only when groups are counted) and of its result (labels
# int32 and their working copies, in one task).
SIDE_BYTES_PER_ITEM = 6
RESULT_BYTES_PER_ITEM = 16
FIT_COPIES = 3  # the features as float64, a centred copy and the fit's per-item scratch
PASS_TASK_COPIES = 4  # a pass task's chunk as read, as float64, centred, and its costs
# The nanny restarts a worker past this fraction of its limit (Dask's default `terminate`).
TERMINATE_FRACTION = 0.95


class OutOfMemory(Exception):
    """A run that cannot fit its worker's memory; the message says by how much."""


@dataclass(frozen=True)
class Worker:
    memory_limit: int  # bytes
    n_workers: int  # in the cluster, this one included
    rss: int  # this process now


def estimated_need(n_items: int, n_features: int, *, data_parallel: bool, worker: Worker) -> int:
    """Bytes the run's worker will hold at its peak."""
    if data_parallel:
        share = n_items / max(worker.n_workers, 1)
        added = (
            n_items * SIDE_BYTES_PER_ITEM
            + share * (4 + 2)  # its share of the persisted labels and of the expert labels
            + ROWS_PER_TASK * n_features * 8 * PASS_TASK_COPIES
            + SAMPLE_ROWS * n_features * 8 * FIT_COPIES
        )
    else:
        added = n_items * (
            n_features * 8 * FIT_COPIES + SIDE_BYTES_PER_ITEM + RESULT_BYTES_PER_ITEM
        )
    return int(worker.rss + added)


def check_fits(n_items: int, n_features: int, *, data_parallel: bool, worker: Worker) -> None:
    """OutOfMemory when the estimate passes the point where the nanny restarts the worker."""
    need = estimated_need(n_items, n_features, data_parallel=data_parallel, worker=worker)
    if need > worker.memory_limit * TERMINATE_FRACTION:
        raise OutOfMemory(out_of_memory_message(need, n_items, worker.memory_limit))


def out_of_memory_message(need: int | None, n_items: int, limit: int) -> str:
    about = f"needs about {need / GIB:.1f} GiB per worker" if need else "needs more memory"
    return (
        f"out of memory on a worker: this run {about} at {n_items:,} items; workers have "
        f"{limit / GIB:.1f} GiB (their memory_limit). Give the Dask workers more memory, or "
        "run on fewer items"
    )


def this_worker() -> Worker | None:
    """The Dask worker this code runs on, or None (in-process runs: no limit of ours)."""
    try:
        from distributed import get_worker
    except ImportError:
        return None
    try:
        worker = get_worker()
    except ValueError:  # not in a worker
        return None
    limit = worker.memory_manager.memory_limit
    if not limit:
        return None
    import psutil

    from app.jobs.featurize.free_memory import release_free_memory

    # What earlier tasks freed but the allocator kept is no part of the need: given back first.
    release_free_memory()
    try:
        n_workers = len(worker.client.scheduler_info(n_workers=-1)["workers"])
    except Exception:  # the scheduler did not answer: count this one
        n_workers = 1
    return Worker(int(limit), n_workers, int(psutil.Process().memory_info().rss))
