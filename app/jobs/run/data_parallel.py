"""Which runs fit data-parallel over the store's chunks, and the scheduler they fit with.

A run on the Dask executor is one task on one worker. For a table of at least
``DISTRIBUTED_MIN_ITEMS`` items, CEC, CEC-IB and PPC read their features as a dask array whose tasks
read the store's chunks themselves, and the run's task hands the passes to the whole cluster
through a worker client (it secedes from its worker's thread pool while it waits, so a 1-thread
worker still runs the passes' tasks). Smaller tables fit in the task: faster where the data fits
one worker (docs/distributed.md).

The inline executor (one process, no cluster) fits the same tables the same way on this
process's threads: its memory then follows the chunks read at once, not the table (a run on
20M x 10 held the features, 800 MB, and the fit's copies of them); only the labels, 4 bytes an
item, are held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from app.db.models import Dataset

# The methods with a data-parallel fit (the methods' chunked/ folders).
DATA_PARALLEL_ALGORITHMS = frozenset({"cec", "cec-ib", "ppc"})
# Rows one pass task reads: whole store chunks, about 20-40 MB of float32 features at d = 10-20,
# so a task's arithmetic outweighs its scheduling.
ROWS_PER_TASK = 524_288


def fits_data_parallel(algorithm: str, dataset: Dataset, min_items: int | None) -> bool:
    """Whether a run of ``algorithm`` on ``dataset`` fits data-parallel (None: never)."""
    return (
        min_items is not None
        and algorithm in DATA_PARALLEL_ALGORITHMS
        and dataset.kind == "table"
        and dataset.n_items >= min_items
    )


@contextmanager
def cluster_client() -> Iterator[None]:
    """Inside a Dask task: make the cluster the scheduler of every ``dask.compute`` here;
    elsewhere (the inline executor) this process's threads."""
    if not _in_a_dask_task():
        import dask

        with dask.config.set(scheduler="threads"):
            yield
        return
    from distributed import worker_client

    with worker_client() as client, client.as_current():
        yield


def _in_a_dask_task() -> bool:
    try:
        from distributed import get_worker
    except ImportError:  # pragma: no cover - distributed ships with the app
        return False
    try:
        get_worker()
    except ValueError:
        return False
    return True
