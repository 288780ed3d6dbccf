"""A real Dask cluster of worker processes on this machine, for the tests that need one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def process_cluster(
    n_workers: int = 2, threads_per_worker: int = 1, memory_limit: str | None = "1GiB"
) -> Iterator[tuple[Any, Any]]:
    """(cluster, client) of a ``LocalCluster`` of worker processes, every worker up."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(n_workers, timeout=60)
        yield cluster, client
