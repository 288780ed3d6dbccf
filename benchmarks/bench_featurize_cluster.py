"""Block-wise featurization of one large picture on local threads and spread over a Dask cluster
(printed, never asserted).

    .venv/bin/python -m benchmarks.bench_featurize_cluster [--size 4096] [--block 2048]

The picture: ``--size`` pixels a side, three 16-bit channels of smoothed noise with edges (a
fluorescence-like field), featurized with the default recipe in blocks of ``--block`` pixels.

* local: ``featurize`` called in this process, its blocks on local threads (one per core, at
  most 4), as the in-process executor runs a featurization job;
* cluster: the same call submitted as one task to a ``LocalCluster`` of W worker processes with
  T threads each, as the Dask executor runs a featurization job: on a cluster with more threads
  than the local ones its blocks become tasks on the cluster's workers, else they run on the
  job's worker's threads (``Blocks.map``; the table says which). With the executor's worker
  plugin (``HeapForArrays``, app/jobs/execute/worker_heap.py) and, for comparison, on workers
  as Dask starts them, whose allocator maps every large array afresh.

Each timing is the median of ``--repeat`` calls after an untimed call on a small picture (numba,
imports and the workers' first contact). The result must be the same: the item map equal, the
features equal to 1e-5 of their scale (printed).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage as ndi

from app.engine.image.blockwise import LOCAL_THREADS
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Featurization, Recipe, featurize
from app.jobs.execute.worker_heap import HeapForArrays


def picture(size: int, seed: int = 0) -> Multichannel:
    rng = np.random.default_rng(seed)
    planes = []
    for sigma in (2.0, 6.0, 18.0):
        field = ndi.gaussian_filter(rng.normal(size=(size, size)).astype(np.float32), sigma)
        field += (np.add.outer(np.arange(size) // 97, np.arange(size) // 131) % 2) * field.std()
        scaled = (field - field.min()) / (field.max() - field.min())
        planes.append((1_000 + 40_000 * scaled).astype(np.uint16))
    return Multichannel.of(np.stack(planes), ["DAPI", "GFP", "Cy5"])


WARM_UP = picture(600, seed=1)  # untimed first: compilation, imports, the workers' first contact


def timed(
    call: Callable[[Multichannel], Featurization], image: Multichannel, repeat: int
) -> tuple[float, Featurization]:
    result = call(WARM_UP)
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = call(image)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def on_cluster(
    workers: int, threads: int, plugin: bool, image: Multichannel, block: int, repeat: int
) -> tuple[float, Any, int]:
    """Seconds, the result, and how many workers ran block tasks in the timed calls."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        if plugin:
            client.register_plugin(HeapForArrays())
        ran_blocks: set[str] = set()

        def call(picture: Multichannel) -> Featurization:
            sent = client.scatter(picture)
            with distributed.get_task_stream(client) as stream:
                task = client.submit(featurize, sent, Recipe(), None, block, pure=False)
                result = task.result()
            if picture is not WARM_UP:
                ran_blocks.update(t["worker"] for t in stream.data if "_block_" in t["key"])
            return result

        seconds, result = timed(call, image, repeat)
        return seconds, result, len(ran_blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--block", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    image = picture(args.size)
    megapixels = args.size**2 / 1e6
    print(
        f"{args.size} x {args.size} x 3 uint16 ({megapixels:.1f} MP), default recipe, blocks of "
        f"{args.block}; median of {args.repeat} after an untimed small one\n"
    )
    local_s, local = timed(
        lambda picture: featurize(picture, Recipe(), block_size=args.block), image, args.repeat
    )
    rows = [(f"this process, {LOCAL_THREADS} local threads", "-", local_s, local)]
    for workers, threads, plugin in ((2, 1, False), (2, 1, True), (2, 2, True)):
        seconds, result, spread = on_cluster(
            workers, threads, plugin, image, args.block, args.repeat
        )
        how = "with the executor's plugin" if plugin else "as Dask starts them"
        where = f"{spread} workers" if spread else "the job's worker's threads"
        rows.append((f"LocalCluster {workers} x {threads}, {how}", where, seconds, result))
    print(
        "| featurization ran in | blocks ran on | s | s / MP | items "
        "| max feature difference / scale | speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    scale = float(np.abs(local.features).max())
    for name, where, seconds, result in rows:
        same_items = np.array_equal(result.item_of_pixel, local.item_of_pixel)
        diff = float(np.abs(result.features - local.features).max()) / scale if same_items else 1
        print(
            f"| {name} | {where} | {seconds:.1f} | {seconds / megapixels:.2f} | {result.n_items:,}"
            f"{'' if same_items else ' (item map differs)'} | {diff:.1e} | "
            f"{local_s / seconds:.2f}x |"
        )


if __name__ == "__main__":
    main()
