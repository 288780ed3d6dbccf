"""Upload a large CSV through the API and report wall time and peak server memory.

Target (issue 2): 1,000,000 x 20 in under 30 s and under 1 GiB peak server RSS.

    .venv/bin/python -m benchmarks.bench_upload            # 1,000,000 x 20
    .venv/bin/python -m benchmarks.bench_upload --rows 100000 --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

The server is the real `python -m app serve` in a subprocess on a throwaway database; memory is
its resident set size, sampled every 50 ms. Printed, never asserted.
"""

import argparse
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

from benchmarks._server import live_server


def write_csv(path: Path, rows: int, cols: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w") as out:
        out.write(",".join(f"f{j}" for j in range(cols)) + "\n")
        for start in range(0, rows, 100_000):
            block = rng.normal(size=(min(100_000, rows - start), cols))
            np.savetxt(out, block, delimiter=",", fmt="%.6g")


class PeakRss(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.NoSuchProcess:
                return
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    csv_path = Path(tempfile.mkdtemp(prefix="bench-upload-")) / "data.csv"
    write_csv(csv_path, args.rows, args.cols)
    size_mb = csv_path.stat().st_size / 1e6

    with live_server(args.database_url) as server:
        base, headers = server.base, server.headers
        project = httpx.post(f"{base}/projects", json={"name": "bench"}, headers=headers).json()
        idle_rss = psutil.Process(server.pid).memory_info().rss
        sampler = PeakRss(server.pid)
        sampler.start()
        started = time.perf_counter()
        with csv_path.open("rb") as data:
            response = httpx.post(
                f"{base}/projects/{project['id']}/datasets",
                files={"file": ("data.csv", data, "text/csv")},
                headers=headers,
                timeout=600,
            )
        elapsed = time.perf_counter() - started
        sampler.running = False
        sampler.join()
        response.raise_for_status()
        body = response.json()

    gib = 1024**3
    print(f"upload of {args.rows:,} x {args.cols} CSV ({size_mb:.0f} MB) through the API")
    print("| database | wall time (s) | target (s) | peak server RSS (MiB) | idle RSS (MiB) |")
    print("|---|---|---|---|---|")
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(
        f"| {backend} | {elapsed:.1f} | 30 | {sampler.peak / 2**20:.0f} | {idle_rss / 2**20:.0f} |"
    )
    print(f"stored: n_items={body['n_items']:,} n_features={body['n_features']}")
    print(
        f"time ratio to target: {elapsed / 30:.2f}; memory ratio to 1 GiB: {sampler.peak / gib:.2f}"
    )


if __name__ == "__main__":
    main()
