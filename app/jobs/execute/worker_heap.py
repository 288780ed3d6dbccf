"""Dask workers keep NumPy's large temporaries on the heap: a worker plugin that the Dask executor
registers on every worker of its cluster, also on workers that join later.

Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536``, so that freed memory goes
back to the system. Setting any of glibc's malloc tunables also freezes its mmap threshold at
128 KiB: every array larger than that becomes a fresh mapping whose pages fault in on first
touch, every time. A featurization took 2.75x its in-process time on such a worker, 1.08x with
the plugin (a 1 MP picture in small blocks, ``benchmarks/bench_featurize_cluster.py``). The
plugin raises the mmap threshold to 64 MiB (a 2,048-pixel block's maps with their halo fit under
it); the trim threshold stays, so freed memory at the heap's top still goes back to the system.
"""

import ctypes
import logging

from distributed.diagnostics.plugin import WorkerPlugin

log = logging.getLogger(__name__)

MMAP_THRESHOLD = 64 * 1024**2
M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def keep_arrays_on_the_heap() -> bool:
    """Raise glibc's mmap threshold in this process; False where there is no glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): its allocator has no such threshold
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


class HeapForArrays(WorkerPlugin):
    """``keep_arrays_on_the_heap`` on every worker."""

    name = "workbench-heap-for-arrays"

    def setup(self, worker: object) -> None:
        if not keep_arrays_on_the_heap():
            log.info("no glibc on worker %s: its allocator is left as it is", worker)
