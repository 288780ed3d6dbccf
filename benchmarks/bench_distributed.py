"""Fits past one machine (issue 39): data-parallel CEC, CEC-IB and PPC on a Dask
``LocalCluster`` beside dask-ml's ``KMeans`` on the same dask array, same cluster, same run.

CEC-IB and PPC get the blobs' labels for 10% of the rows; PPC also ``MUST_LINKS`` hard
must-links between rows of one blob drawn across the whole array (so across chunks: they are
solved in relation groups).

The data: ``--rows`` x ``--features`` float32 Gaussian blobs (``--clusters`` of them, unit
spread, centres uniform in [-10, 10]^d), generated chunk by chunk from a seed, so no process
ever holds the whole array; every pass (and every dask-ml iteration) regenerates its chunks, the
same cost for both. The workers' memory limit (``--worker-memory``) is below the dataset's size.

Printed (not asserted), per method: the fit's wall time, passes (dask-ml: Lloyd iterations),
time per pass (ours: between progress calls; dask-ml: a fit started from given centres with
tol 0, divided by its iterations), the ARI against the true blobs on a 1M-row sample, beside
the single-machine fit on that sample (quality target: >= 0.98x its ARI and >= dask-ml's), and
the throughput on 2 workers over 1 worker (target >= 1.7x).

    .venv/bin/python -m benchmarks.bench_distributed [--rows 20000000] [--features 10]
        [--clusters 20] [--workers 2] [--worker-memory 512MiB] [--skip-peer]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import adjusted_rand_score

from app.engine.cec import CEC, CECIB
from app.engine.ppc import PPC

SAMPLE_ROWS = 1_000_000
LABELED_SHARE = 0.1
MUST_LINKS = 5_000


@dataclass(frozen=True)
class Blobs:
    rows: int
    features: int
    clusters: int
    chunk_rows: int
    seed: int = 0

    @property
    def centres(self) -> NDArray[np.float64]:
        rng = np.random.RandomState(self.seed)
        return rng.uniform(-10, 10, size=(self.clusters, self.features))

    def chunk_sizes(self) -> list[int]:
        full, rest = divmod(self.rows, self.chunk_rows)
        return [self.chunk_rows] * full + ([rest] if rest else [])

    def _draws(self, index: int, rows: int) -> tuple[np.random.RandomState, NDArray[np.int64]]:
        """A chunk's random stream after its blob ids (drawn first, so the ids alone cost no
        points)."""
        rng = np.random.RandomState([self.seed, index])
        return rng, rng.randint(self.clusters, size=rows)

    def points(self, index: int, rows: int) -> NDArray[np.float32]:
        rng, truth = self._draws(index, rows)
        points = self.centres[truth] + rng.standard_normal((rows, self.features))
        return points.astype(np.float32)

    def truth(self, index: int, rows: int) -> NDArray[np.int64]:
        return self._draws(index, rows)[1]

    def partial_labels(self, index: int, rows: int) -> NDArray[np.int64]:
        truth = self.truth(index, rows)
        hidden = np.random.RandomState([self.seed, index, 1]).rand(rows) >= LABELED_SHARE
        return np.where(hidden, -1, truth)

    def dask(self, what: str, store: Path | None = None) -> Any:
        """``points``, ``truth`` or ``labels`` as a dask array: read from the Zarr arrays
        ``write`` left in ``store``, or generated chunk by chunk when there is none."""
        import dask
        import dask.array as da

        if store is not None:
            return da.from_zarr(str(store / what))
        make = {"points": self.points, "truth": self.truth, "labels": self.partial_labels}[what]
        parts = []
        for index, rows in enumerate(self.chunk_sizes()):
            shape = (rows, self.features) if what == "points" else (rows,)
            dtype = np.float32 if what == "points" else np.int64
            parts.append(da.from_delayed(dask.delayed(make)(index, rows), shape, dtype=dtype))
        return da.concatenate(parts)

    def write(self, store: Path) -> None:
        """The blobs as Zarr arrays on disk, one chunk at a time (as the workbench's array
        store holds a table: workers read its chunks, nobody holds the whole)."""
        import zarr

        # As app/store writes a table: raw float chunks, integers byte-shuffled LZ4.
        from app.store.stored import compressors_for

        def create(name: str, shape: tuple[int, ...], dtype: Any) -> Any:
            return zarr.create_array(
                str(store / name),
                shape=shape,
                dtype=dtype,
                chunks=(self.chunk_rows, *shape[1:]),
                compressors=compressors_for(np.dtype(dtype)),
            )

        arrays = {
            "points": create("points", (self.rows, self.features), np.float32),
            "truth": create("truth", (self.rows,), np.int64),
            "labels": create("labels", (self.rows,), np.int64),
        }  # fmt: skip
        start = 0
        for index, rows in enumerate(self.chunk_sizes()):
            arrays["points"][start : start + rows] = self.points(index, rows)
            arrays["truth"][start : start + rows] = self.truth(index, rows)
            arrays["labels"][start : start + rows] = self.partial_labels(index, rows)
            start += rows


@dataclass
class PassClock:
    """The progress callback: when each pass ended."""

    stamps: list[float] = field(default_factory=list)

    def __call__(self, _iteration: int, _cost: float) -> bool:
        self.stamps.append(time.perf_counter())
        return True

    def per_pass(self) -> float:
        gaps = np.diff(self.stamps)
        return float(np.median(gaps)) if gaps.size else float("nan")


def sample_rows(blobs: Blobs, rows: int) -> NDArray[np.int64]:
    return np.sort(np.random.RandomState(7).choice(blobs.rows, min(rows, blobs.rows), False))


def must_links(truth: NDArray[np.int64], rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """``MUST_LINKS`` pairs of the sample's rows that share a blob (row indices of X)."""
    rng = np.random.RandomState(11)
    pairs = []
    for blob in np.unique(truth):
        members = rows[truth == blob]
        count = MUST_LINKS // len(np.unique(truth)) + 1
        pairs.append(rng.choice(members, size=(count, 2), replace=False))
    out = np.concatenate(pairs)[:MUST_LINKS]
    return np.asarray(out, dtype=np.int64)


def _ppc(blobs: Blobs, n_init: int, progress: Any = None) -> PPC:
    return PPC(blobs.clusters, covariance="full", n_init=n_init, random_state=0, progress=progress)


def _ari_on(truth: NDArray[np.int64], labels: Any, rows: NDArray[np.int64]) -> float:
    return float(adjusted_rand_score(truth, np.asarray(labels[rows].compute())))


@dataclass(frozen=True)
class Sample:
    """What every method is measured on: the blobs, read from the Zarr store `store` (None:
    generated in every pass), and the rows scored, with their true blobs."""

    blobs: Blobs
    truth: NDArray[np.int64]
    rows: NDArray[np.int64]
    store: Path | None = None

    def dask(self, name: str) -> Any:
        return self.blobs.dask(name, self.store)

    def in_memory(self, name: str) -> NDArray[Any]:
        """The scored rows of an array, in memory."""
        return np.asarray(self.dask(name)[self.rows].compute())


def run_ours(method: str, sample: Sample, n_init: int) -> dict[str, Any]:
    blobs, truth, rows = sample.blobs, sample.truth, sample.rows
    clock = PassClock()
    X = sample.dask("points")
    started = time.perf_counter()
    if method == "CEC":
        model: Any = CEC(blobs.clusters, n_init=n_init, random_state=0, progress=clock).fit(X)
    elif method == "PPC":
        pairs = must_links(truth, rows)
        model = _ppc(blobs, n_init, clock).fit(
            X,
            pairs=pairs,
            weights=np.full(len(pairs), np.inf),
            labels=sample.dask("labels"),
        )
    else:
        y = sample.dask("labels")
        model = CECIB(
            blobs.clusters, n_init=n_init, init="labels", random_state=0, progress=clock
        ).fit(X, y)
    seconds = time.perf_counter() - started
    return {
        "method": method,
        "seconds": seconds,
        "start_s": (clock.stamps[0] - started) if clock.stamps else float("nan"),
        "passes": model.n_iter_,
        "per_pass_s": clock.per_pass(),
        "clusters": getattr(model, "n_clusters_", len(model.means_)),
        "ari": _ari_on(truth, model.labels_, rows),
        "energy": getattr(model, "energy_", -getattr(model, "lower_bound_", np.nan)),
    }


def run_peer(sample: Sample) -> dict[str, Any]:
    from dask_ml.cluster import KMeans

    blobs, truth, rows = sample.blobs, sample.truth, sample.rows
    X = sample.dask("points")
    started = time.perf_counter()
    model = KMeans(n_clusters=blobs.clusters, random_state=0).fit(X)
    seconds = time.perf_counter() - started
    # Time per Lloyd iteration alone: from given centres, no k-means|| start, tol 0.
    centres = np.asarray(X[: blobs.clusters].compute(), dtype=np.float64)
    timed = KMeans(n_clusters=blobs.clusters, init=centres, max_iter=3, tol=0.0, random_state=0)
    lloyd_started = time.perf_counter()
    timed.fit(X)
    per_iteration = (time.perf_counter() - lloyd_started) / max(int(timed.n_iter_), 1)
    return {
        "method": "dask-ml KMeans",
        "seconds": seconds,
        "start_s": float("nan"),
        "passes": int(model.n_iter_),
        "per_pass_s": per_iteration,
        "clusters": len(np.unique(np.asarray(model.labels_[rows].compute()))),
        "ari": _ari_on(truth, model.labels_, rows),
        "energy": float("nan"),
    }


def single_machine(method: str, sample: Sample, n_init: int) -> float:
    """The same method in memory on the sample rows: the quality oracle."""
    blobs, truth, rows = sample.blobs, sample.truth, sample.rows
    X = np.asarray(sample.in_memory("points"), dtype=np.float64)
    if method == "CEC":
        labels = CEC(blobs.clusters, n_init=n_init, random_state=0).fit(X).labels_
    elif method == "PPC":
        at = np.searchsorted(rows, must_links(truth, rows))
        y = sample.in_memory("labels")
        model = _ppc(blobs, n_init).fit(X, pairs=at, weights=np.full(len(at), np.inf), labels=y)
        labels = model.labels_
    else:
        y = sample.in_memory("labels")
        model = CECIB(blobs.clusters, n_init=n_init, init="labels", random_state=0)
        labels = model.fit(X, y).labels_
    return float(adjusted_rand_score(truth, labels))


def pass_time(blobs: Blobs, workers: int, memory: str, store: Path | None = None) -> float:
    """Median time per CEC pass on a cluster of ``workers`` 1-thread workers."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, memory_limit=memory, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        clock = PassClock()
        CEC(blobs.clusters, n_init=1, random_state=0, max_iter=4, polish=False, progress=clock).fit(
            blobs.dask("points", store)
        )
        return clock.per_pass()


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    argv = sys.argv[1:] if argv is None else argv
    if "--app" in argv:  # the same fits through the REST API (benchmarks/distributed_app.py)
        from benchmarks.distributed_app import main as through_the_app

        through_the_app([a for a in argv if a != "--app"])
        return []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--chunk-rows", type=int, default=500_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="512MiB")
    parser.add_argument("--n-init", type=int, default=3)
    parser.add_argument("--methods", nargs="*", default=["CEC", "CEC-IB", "PPC"])
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument(
        "--generate",
        action="store_true",
        help="generate the chunks in every pass instead of reading them from a Zarr store",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        return _measure(args, None if args.generate else Path(tmp))


def _measure(args: argparse.Namespace, store: Path | None) -> list[dict[str, Any]]:

    from distributed import Client, LocalCluster

    blobs = Blobs(args.rows, args.features, args.clusters, args.chunk_rows)
    size_mb = args.rows * args.features * 4 / 2**20
    print(
        f"{args.rows:,} x {args.features} float32 blobs ({size_mb:,.0f} MiB), k = "
        f"{args.clusters}, {len(blobs.chunk_sizes())} chunks; {args.workers} workers x 1 "
        f"thread, memory limit {args.worker_memory} each"
    )
    if store is not None:
        started = time.perf_counter()
        blobs.write(store)
        print(f"written to a Zarr store on disk in {time.perf_counter() - started:.1f} s")
    rows = sample_rows(blobs, SAMPLE_ROWS)
    results: list[dict[str, Any]] = []
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        truth = np.asarray(blobs.dask("truth", store)[rows].compute())
        sample = Sample(blobs, truth, rows, store)
        for method in args.methods:
            found = run_ours(method, sample, args.n_init)
            found["single_machine_ari"] = single_machine(method, sample, args.n_init)
            results.append(found)
        if not args.skip_peer:
            results.append(run_peer(sample))
        lost = [w for w, info in client.scheduler_info()["workers"].items() if not info]
        killed = len(cluster.workers) < args.workers or bool(lost)
    print(f"\nworkers lost or restarted for memory: {'yes' if killed else 'none'}")
    print(
        "| method | fit s | start s | passes | s / pass | clusters | ARI (1M sample) "
        "| single-machine ARI |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        single = r.get("single_machine_ari")
        print(
            f"| {r['method']} | {r['seconds']:.1f} | {r['start_s']:.1f} | {r['passes']} | "
            f"{r['per_pass_s']:.2f} | {r['clusters']} | {r['ari']:.4f} | "
            f"{'' if single is None else f'{single:.4f}'} |"
        )
    peer = next((r for r in results if r["method"].startswith("dask-ml")), None)
    for r in results:
        if r is peer:
            continue
        if peer is not None:
            print(
                f"{r['method']}: time per pass / dask-ml's per iteration = "
                f"{r['per_pass_s'] / peer['per_pass_s']:.2f} (target <= 0.5); ARI "
                f"{r['ari']:.4f} vs dask-ml {peer['ari']:.4f}"
            )
        print(
            f"{r['method']}: ARI / single-machine ARI = "
            f"{r['ari'] / r['single_machine_ari']:.4f} (target >= 0.98)"
        )
    if not args.skip_scaling:
        one = pass_time(blobs, 1, args.worker_memory, store)
        two = pass_time(blobs, 2, args.worker_memory, store)
        print(
            f"CEC time per pass: 1 worker {one:.2f} s, 2 workers {two:.2f} s; throughput "
            f"2 / 1 = {one / two:.2f}x (target >= 1.7)"
        )
    return results


if __name__ == "__main__":
    main()
