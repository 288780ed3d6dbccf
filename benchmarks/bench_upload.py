"""Upload large tables through the API: time to 201 beside a peer reading the same file in the
same run, the server's peak memory, and what the database and the array store hold after.

Targets, as two cores allow: a warm 1M x 20 CSV upload within 3x `pyarrow.csv.read_csv` on the
same file; a 1M x 20 Parquet upload within 2x `pyarrow.parquet.read_table` plus writing the
matrix once to the same disk (what no upload can skip: the `read + write` column); an NPY within
3x `numpy.load`; the server's process tree growing by under 600 MiB over its idle size during a
3M x 20 CSV (`--rows 3000000 --formats csv`), and holding under 300 MiB more after the series of
uploads than before them; the SQL database under 5 MB after a 1M x 20 upload; and reading the
dataset back for a run not slower than before (the `load` line: the run's own `timings.load_s`
beside `numpy.load` of the same matrix).

    .venv/bin/python -m benchmarks.bench_upload                       # 1M x 20: csv, npy, parquet
    .venv/bin/python -m benchmarks.bench_upload --rows 10000000 --formats csv,parquet
    .venv/bin/python -m benchmarks.bench_upload --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

The server is the real `python -m app serve` in a subprocess on a throwaway database and store;
memory is its resident set size, sampled every 20 ms. Each side is timed ``--repeat`` times
(default 5), alternating, and both the median and the best are printed, each ratio of like to
like: a single shot charged the server's first upload with its lazy imports and caches while
the peer, in a warm process, paid nothing of the kind, and on a shared 2-core machine the
peer's own time varied 2x between runs of a minute apart. Printed, never asserted.
"""

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from benchmarks._server import add_database_option, live_server, run_request


def make_files(folder: Path, rows: int, cols: int, formats: list[str]) -> dict[str, Path]:
    """The same random table as CSV (6 significant digits), NPY and Parquet, written block by
    block (the benchmark itself stays small)."""
    rng = np.random.default_rng(0)
    names = [f"f{j}" for j in range(cols)]
    paths = {f: folder / f"data.{f}" for f in formats}
    csv_out = paths["csv"].open("wb") if "csv" in paths else None
    parquet_out = (
        pq.ParquetWriter(paths["parquet"], pa.schema([(n, pa.float64()) for n in names]))
        if "parquet" in paths
        else None
    )
    npy_out = (
        np.lib.format.open_memmap(paths["npy"], mode="w+", dtype=np.float64, shape=(rows, cols))
        if "npy" in paths
        else None
    )
    step = 500_000
    for start in range(0, rows, step):
        block = np.round(rng.normal(size=(min(step, rows - start), cols)), 5)
        table = pa.table({n: block[:, j] for j, n in enumerate(names)})
        if csv_out is not None:
            pa_csv.write_csv(
                table, csv_out, write_options=pa_csv.WriteOptions(include_header=start == 0)
            )
        if parquet_out is not None:
            parquet_out.write_table(table)
        if npy_out is not None:
            npy_out[start : start + block.shape[0]] = block
    if csv_out is not None:
        csv_out.close()
    if parquet_out is not None:
        parquet_out.close()
    if npy_out is not None:
        npy_out.flush()
        del npy_out
    return paths


def peer_seconds(kind: str, path: Path) -> tuple[str, float]:
    started = time.perf_counter()
    if kind == "csv":
        pa_csv.read_csv(path)
        name = "pyarrow.csv.read_csv"
    elif kind == "npy":
        np.load(path)
        name = "numpy.load"
    else:
        pq.read_table(path)
        name = "pyarrow.parquet.read_table"
    return name, time.perf_counter() - started


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of the server and every process it started (kernel warm-up children)."""
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


class PeakRss(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            try:
                self.peak = max(self.peak, tree_rss(self.process))
            except psutil.NoSuchProcess:
                return
            time.sleep(0.02)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def disk_write_seconds(folder: Path, rows: int, cols: int) -> float:
    """What an upload cannot do without, however it parses: writing its matrix to the store's
    disk once, to the disk itself (fsync): a page-cache write alone costs a memcpy on an idle
    machine (0.03 s for 160 MB) and 0.5 s after a few uploads' gigabytes, when the kernel makes
    writers wait for the writeback, so only the durable write is the same from run to run."""
    matrix = np.random.default_rng(1).normal(size=(rows, cols))
    target = folder / "disk-write.npy"
    started = time.perf_counter()
    with target.open("wb") as out:
        np.save(out, matrix)
        out.flush()
        os.fsync(out.fileno())
    seconds = time.perf_counter() - started
    target.unlink()
    return seconds


def upload(server: Any, project_id: int, path: Path) -> tuple[float, int, dict[str, Any]]:
    sampler = PeakRss(server.pid)
    sampler.start()
    started = time.perf_counter()
    with path.open("rb") as data:
        response = httpx.post(
            f"{server.base}/projects/{project_id}/datasets",
            files={"file": (path.name, data, "application/octet-stream")},
            headers=server.headers,
            timeout=3600,
        )
    elapsed = time.perf_counter() - started
    sampler.running = False
    sampler.join()
    response.raise_for_status()
    return elapsed, sampler.peak, response.json()


def run_load_seconds(server: Any, dataset_id: int) -> float:
    """A CEC run's own `load_s` (reading the dataset back from the store for the fit)."""
    run = httpx.post(
        f"{server.base}/runs",
        json=run_request(dataset_id, "cec", n_clusters=2, n_init=1, max_iter=1),
        headers=server.headers,
    ).json()
    while run["status"] in ("queued", "running"):
        time.sleep(0.5)
        run = httpx.get(f"{server.base}/runs/{run['id']}", headers=server.headers).json()
    result = httpx.get(f"{server.base}/runs/{run['id']}/result", headers=server.headers).json()
    return float(result.get("metrics", {}).get("timings", {}).get("load_s", float("nan")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--formats", default="csv,npy,parquet")
    add_database_option(parser)
    parser.add_argument("--no-run", action="store_true", help="skip the read-back run")
    parser.add_argument(
        "--repeat", type=int, default=5, help="times each side runs (median and best printed)"
    )
    args = parser.parse_args()
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]

    folder = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    paths = make_files(folder, args.rows, args.cols, formats)
    print(f"{args.rows:,} x {args.cols}; files: " + ", ".join(
        f"{k} {p.stat().st_size / 1e6:.0f} MB" for k, p in paths.items()))  # fmt: skip
    # No kernel warm-up: its compiling children would take the cores the uploads are timed on
    # (an upload measures ingestion, not a server's first minute).
    with live_server(
        args.database_url, MAX_UPLOAD_BYTES=str(64 * 1024**3), WARM_KERNELS_ON_START="false"
    ) as server:
        project = httpx.post(
            f"{server.base}/projects", json={"name": "bench"}, headers=server.headers
        ).json()
        floor_s = disk_write_seconds(server.workdir / "var", args.rows, args.cols)
        idle = tree_rss(psutil.Process(server.pid))
        print(
            "| format | upload to 201 (s), median / best | peer | peer (s), median / best "
            "| ratio, median / best | peer + one write (s) | ratio to it, median | peak growth "
            "of the server's processes over idle (MiB) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        first_id = None
        for kind, path in paths.items():
            peer_times, times, peak = [], [], 0
            for _ in range(max(args.repeat, 1)):
                peer, peer_s = peer_seconds(kind, path)
                seconds, peak_once, body = upload(server, project["id"], path)
                peer_times.append(peer_s)
                times.append(seconds)
                peak = max(peak, peak_once)
                first_id = first_id or body["id"]
            peer_s, seconds = statistics.median(peer_times), statistics.median(times)
            best_peer, best = min(peer_times), min(times)
            print(
                f"| {kind} | {seconds:.2f} / {best:.2f} | {peer} | {peer_s:.2f} / {best_peer:.2f} "
                f"| {seconds / peer_s:.1f}x / {best / best_peer:.1f}x | {peer_s + floor_s:.2f} "
                f"| {seconds / (peer_s + floor_s):.1f}x | {(peak - idle) / 2**20:.0f} |"
            )
        database = server.workdir / "bench.db"
        if args.database_url is None:
            files = [Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm")]
            db_bytes = sum(_size(f) for f in files if f.exists())
            store_bytes = _size(server.workdir / "var" / "arrays")
            uploads = len(paths) * max(args.repeat, 1)
            print(f"\nSQLite database after {uploads} uploads: {db_bytes / 2**20:.2f} MiB "
                  f"(WAL included); array store: {store_bytes / 2**20:.0f} MiB")  # fmt: skip
        time.sleep(3.0)  # what the last upload freed, given back
        held = tree_rss(psutil.Process(server.pid)) - idle
        print(
            f"the server's processes: {idle / 2**20:.0f} MiB idle before the uploads, "
            f"{held / 2**20:+.0f} MiB after the {len(paths) * max(args.repeat, 1)} of them "
            "(target under +300)"
        )
        print(f"writing the same {args.rows:,} x {args.cols} float64 matrix once to the store's "
              f"disk (numpy.save and fsync, no parsing, no HTTP): {floor_s:.2f} s")  # fmt: skip
        if not args.no_run and first_id is not None:
            load = run_load_seconds(server, first_id)
            started = time.perf_counter()
            if "npy" in paths:
                np.load(paths["npy"])
            numpy_s = time.perf_counter() - started
            print(f"read back for a run (timings.load_s): {load:.2f} s; numpy.load of the same "
                  f"matrix: {numpy_s:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
