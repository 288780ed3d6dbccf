"""Runs at 20M rows through the app, as a user with big data takes them (`bench_distributed.py
--app`): a Parquet upload with a label column, must-links through the batch route, and CEC,
CEC-IB and PPC runs through the REST API on `JOBS_EXECUTOR=dask` with a `LocalCluster` of
``--workers`` workers x 1 thread x ``--worker-memory``; beside each, the engine's own
data-parallel fit on the same array on the same cluster in the same run.

The data: ``bench_distributed.Blobs`` (``--clusters`` float32 Gaussian blobs), written chunk by
chunk to a Parquet file (features, the true blob as `truth`, the blob's name for 10% of the rows
as `label`) and to a Zarr store for the engine's fit; no process holds the whole table.

Printed (not asserted), per run: POST to succeeded, the engine's fit on the same array, their
ratio (target <= 1.5x), the run's ARI (computed on the cluster from the ground truth column),
the run's attempts and error, and how much the SQLite database grew (target < 1 MB a run); the
batch of 5,000 must-links (target < 2 s); a warm-started CEC-IB run after one more label act
(target <= 15 s); and the workers restarted for memory (target 0).

    .venv/bin/python -m benchmarks.bench_distributed --app [--rows 20000000] [--workers 2]
        [--worker-memory 1GiB] [--methods cec cec-ib ppc]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks._peak_memory import PeakRss
from benchmarks._server import live_server, run_request
from benchmarks.bench_distributed import MUST_LINKS, Blobs, must_links

ENGINE = {"cec": "CEC", "cec-ib": "CEC-IB", "ppc": "PPC"}
COUNT = {"cec": "n_clusters", "cec-ib": "n_clusters", "ppc": "n_components"}


def write_parquet(blobs: Blobs, path: Path) -> None:
    """The blobs as one Parquet file, a row group per chunk: f0.., truth, label."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = pa.array([f"blob {c}" for c in range(blobs.clusters)])
    writer = None
    for index, rows in enumerate(blobs.chunk_sizes()):
        points = blobs.points(index, rows)
        labels = blobs.partial_labels(index, rows)
        columns: dict[str, Any] = {f"f{j}": points[:, j] for j in range(blobs.features)}
        columns["truth"] = blobs.truth(index, rows)
        mask = labels < 0
        indices = pa.array(np.where(mask, 0, labels).astype(np.int32), mask=mask)
        columns["label"] = pa.DictionaryArray.from_arrays(indices, names)
        table = pa.table(columns)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()


def database_bytes(workdir: Path) -> int:
    """The SQLite database with its WAL."""
    return sum(p.stat().st_size for p in workdir.glob("bench.db*"))


def wait_run(server: Any, run_id: int, timeout: float = 3600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run = httpx.get(f"{server.base}/runs/{run_id}", headers=server.headers).json()
        if run["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return run
        time.sleep(0.25)


def metrics_of(server: Any, run_id: int) -> dict[str, Any]:
    """The result without its labels (20M of them would be the whole column as JSON)."""
    response = httpx.get(
        f"{server.base}/runs/{run_id}/result",
        params={"labels": "false"},
        headers=server.headers,
        timeout=600,
    )
    response.raise_for_status()
    return dict(response.json().get("metrics", {}))


def one_run(server: Any, dataset_id: int, algorithm: str, **params: Any) -> dict[str, Any]:
    before = database_bytes(server.workdir)
    started = time.perf_counter()
    response = httpx.post(
        f"{server.base}/runs",
        json=run_request(dataset_id, algorithm, **params),
        headers=server.headers,
        timeout=600,
    )
    response.raise_for_status()
    run = wait_run(server, response.json()["id"])
    seconds = time.perf_counter() - started
    metrics = metrics_of(server, run["id"]) if run["status"] == "succeeded" else {}
    return {
        "algorithm": algorithm,
        "status": run["status"],
        "error": run["error"],
        "attempt": run.get("attempt"),
        "seconds": seconds,
        "ari": metrics.get("ari"),
        "passes": (metrics.get("execution") or {}).get("passes"),
        "sqlite_growth": database_bytes(server.workdir) - before,
        "warm_start": metrics.get("warm_start"),
    }


def sample_links(blobs: Blobs, store: Path) -> np.ndarray:
    """``MUST_LINKS`` hard must-links between rows of one blob, drawn across the whole array."""
    rows = np.sort(np.random.RandomState(0).choice(blobs.rows, 200_000, replace=False))
    truth = np.asarray(blobs.dask("truth", store)[rows].compute())
    return must_links(truth, rows)[:MUST_LINKS]


def engine_fit(algorithm: str, blobs: Blobs, store: Path, n_init: int) -> float:
    """The engine's own data-parallel fit on the same array (current client's cluster)."""
    from app.engine import CEC, CECIB, PPC

    X = blobs.dask("points", store)
    started = time.perf_counter()
    if algorithm == "cec":
        CEC(blobs.clusters, n_init=n_init, random_state=0).fit(X)
    elif algorithm == "cec-ib":
        CECIB(blobs.clusters, n_init=n_init, random_state=0).fit(X, blobs.dask("labels", store))
    else:
        links = sample_links(blobs, store)
        PPC(blobs.clusters, random_state=0).fit(
            X, pairs=links, weights=np.full(len(links), np.inf), labels=blobs.dask("labels", store)
        )
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="1GiB")
    parser.add_argument("--n-init", type=int, default=3)
    parser.add_argument("--methods", nargs="*", default=["cec", "cec-ib", "ppc"])
    parser.add_argument("--skip-engine", action="store_true")
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    blobs = Blobs(args.rows, args.features, args.clusters, 524_288)
    with live_server(WARM_KERNELS_ON_START="false") as probe:
        workdir = probe.workdir
    parquet = workdir / "blobs.parquet"
    started = time.perf_counter()
    write_parquet(blobs, parquet)
    zarr_store = workdir / "blobs.zarr"
    blobs.write(zarr_store)
    written_s = time.perf_counter() - started
    print(
        f"{args.rows:,} x {args.features} float32, {args.clusters} blobs, 10% labeled: Parquet "
        f"{parquet.stat().st_size / 2**20:,.0f} MiB, written in {written_s:.0f} s; "
        f"{args.workers} workers x 1 thread x {args.worker_memory}"
    )
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
        live_server(
            JOBS_EXECUTOR="dask",
            DASK_SCHEDULER=cluster.scheduler_address,
            DASK_WORKERS_EXPECTED=str(args.workers),
            MAX_UPLOAD_BYTES=str(64 * 1024**3),
            WARM_KERNELS_ON_START="false",
        ) as server,
    ):
        project = httpx.post(
            f"{server.base}/projects", json={"name": "big"}, headers=server.headers
        ).json()
        started = time.perf_counter()
        with parquet.open("rb") as data:
            response = httpx.post(
                f"{server.base}/projects/{project['id']}/datasets",
                files={"file": (parquet.name, data, "application/octet-stream")},
                data={"ground_truth_column": "truth", "label_column": "label"},
                headers=server.headers,
                timeout=3600,
            )
        response.raise_for_status()
        dataset_id = response.json()["id"]
        upload_s = time.perf_counter() - started
        url = f"{server.base}/datasets/{dataset_id}"
        while httpx.get(url, headers=server.headers).json()["status"] not in ("ready", "failed"):
            time.sleep(0.5)
        print(f"upload 201 in {upload_s:.1f} s; ready {time.perf_counter() - started:.1f} s")

        pairs = sample_links(blobs, zarr_store)
        batch = {"annotations": [{"kind": "must_link", "items": p.tolist()} for p in pairs]}
        started = time.perf_counter()
        response = httpx.post(
            f"{server.base}/datasets/{dataset_id}/annotations/batch",
            json=batch,
            headers=server.headers,
            timeout=600,
        )
        response.raise_for_status()
        batch_s = time.perf_counter() - started
        print(f"{len(pairs):,} must-links through the batch route: {batch_s:.2f} s (target < 2)")

        # Peak resident memory of every process a run touches: the server (with its children)
        # and each Dask worker (its own process; the nanny apart).
        pids = {"server": server.pid}
        for _, pid in sorted(client.run(os.getpid).items()):
            pids[f"worker {len(pids)}"] = int(pid)

        def measured(algorithm: str, **params: Any) -> dict[str, Any]:
            with PeakRss(pids) as peaks:
                found = one_run(server, dataset_id, algorithm, **params)
            found["peak_mib"] = {k: round(v / 2**20) for k, v in peaks.bytes.items()}
            return found

        results = []
        for algorithm in args.methods:
            params: dict[str, Any] = {COUNT[algorithm]: args.clusters, "random_state": 0}
            if algorithm != "ppc":
                params["n_init"] = args.n_init
            found = measured(algorithm, **params)
            found["engine_s"] = (
                None if args.skip_engine else engine_fit(algorithm, blobs, zarr_store, args.n_init)
            )
            results.append(found)
            print(found)

        if "cec-ib" in args.methods:
            # 1,000 more items of blob 0 named so (unlabeled until now: no conflict).
            rows = blobs.chunk_sizes()[0]
            unlabeled = (blobs.partial_labels(0, rows) < 0) & (blobs.truth(0, rows) == 0)
            items = np.flatnonzero(unlabeled)[:1_000].tolist()
            label = {"kind": "label", "items": items, "label": "blob 0"}
            httpx.post(
                f"{server.base}/datasets/{dataset_id}/annotations",
                json=label,
                headers=server.headers,
            ).raise_for_status()
            warm = measured(
                "cec-ib", n_clusters=args.clusters, random_state=0, n_init=args.n_init,
                warm_start=True,
            )  # fmt: skip
            print(f"warm-started CEC-IB after one more act: {warm}")
        restarts = client.get_events("worker-restart-memory")
        health = httpx.get(f"{server.base}/health").json()["jobs"]

    print(
        "\n| run | status | POST to succeeded s | engine fit s | ratio | ARI | attempts "
        "| SQLite growth | peak RSS MiB (server, each worker) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["seconds"] / r["engine_s"] if r["engine_s"] else float("nan")
        ari = "" if r["ari"] is None else f"{r['ari']:.4f}"
        engine = "" if r["engine_s"] is None else f"{r['engine_s']:.1f}"
        print(
            f"| {r['algorithm']} | {r['status']} | {r['seconds']:.1f} | {engine} | "
            f"{ratio:.2f}x (target <= 1.5) | {ari} | {r['attempt']} | "
            f"{r['sqlite_growth'] / 1e6:.2f} MB (target < 1) | "
            f"{', '.join(str(v) for v in r['peak_mib'].values())} (workers' limit "
            f"{args.worker_memory}) |"
        )
        if r["error"]:
            print(f"  error: {r['error']}")
    print(f"workers restarted for memory: {len(restarts)} (target 0); /health jobs: {health}")
