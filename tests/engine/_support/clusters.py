"""A real Dask cluster of worker processes on this machine, for the tests that need one."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask
import pytest


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


def scheduler_workers(client: Any) -> list[str]:
    """The addresses of the workers the scheduler itself knows (not the client's cache)."""
    return client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.workers))


def kill_one_worker(client: Any) -> str:
    """SIGKILL one worker process of ``client``'s cluster (the first by address) and wait
    until the scheduler has noticed it gone; the killed worker's address."""
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while victim in scheduler_workers(client):
        assert time.monotonic() < deadline, "the scheduler did not notice the kill"
        time.sleep(0.05)
    return victim


@contextmanager
def threads_unless_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """The threaded dask scheduler for the test, unless it uses a ``cluster`` fixture: then
    its module's ``Client`` stays the default one."""
    if "cluster" in request.fixturenames:
        yield
        return
    with dask.config.set(scheduler="threads"):
        yield
