"""Dask workers keep large NumPy temporaries on the heap once the executor's plugin is registered
(app/jobs/execute/worker_heap.py): measured with glibc's own accounting of mapped memory on a real
worker process, which Dask's nanny starts with MALLOC_TRIM_THRESHOLD_ set."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.jobs.execute.worker_heap import HeapForArrays, keep_arrays_on_the_heap

distributed = pytest.importorskip("distributed")

ARRAY_BYTES = 16 * 1024**2


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",  # bytes in mmapped regions
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def mapped_bytes_of_a_new_array() -> int:
    """How much of a fresh 16 MiB array glibc placed in its own mapping."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _Mallinfo2
    before = libc.mallinfo2().hblkhd
    array = np.ones(ARRAY_BYTES // 8)
    after = libc.mallinfo2().hblkhd
    del array
    return int(after - before)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    try:
        ctypes.CDLL("libc.so.6").mallinfo2  # noqa: B018 - glibc >= 2.33
    except (OSError, AttributeError):
        pytest.skip("needs glibc's mallinfo2")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_the_plugin_keeps_large_arrays_off_fresh_mappings(client: Any) -> None:
    (before,) = client.run(mapped_bytes_of_a_new_array).values()
    assert before >= ARRAY_BYTES  # Dask's default: every large array is a fresh mapping
    client.register_plugin(HeapForArrays())
    (after,) = client.run(mapped_bytes_of_a_new_array).values()
    assert after == 0


def test_keeping_arrays_on_the_heap_in_this_process() -> None:
    assert keep_arrays_on_the_heap() is True
