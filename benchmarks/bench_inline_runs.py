"""Runs on a large table with the inline executor (the embedded default), fitted in memory
against fitted over the store's chunks on the server's threads (printed, never asserted).

The same table (blobs, float32, uploaded as NPY) in two apps that differ only in
`DISTRIBUTED_MIN_ITEMS`: above the table's size (the features loaded whole, fitted in memory)
and at it (data-parallel over the store's chunks, dask's threaded scheduler). A CEC run with
its defaults (``n_clusters`` the blobs' count), twice in each: POST to succeeded, the peak
growth of this process's resident memory during the run (the app runs in it), the ARI against
the blobs' classes and how the run says it fitted.

    .venv/bin/python -m benchmarks.bench_inline_runs [--rows 2000000] [--cols 10] [--centres 20]
"""

import argparse
import io
import os
import tempfile
import time

import numpy as np
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from app.config import Settings
from app.main import create_app
from benchmarks._peak_memory import with_peak_rss

PASSWORD = "bench-password-123"


def _run(client: TestClient, headers: dict[str, str], dataset: int, centres: int) -> int:
    """A CEC run, POSTed and followed until it ends: its id."""
    body = {"dataset_id": dataset, "algorithm": "cec", "params": {"n_clusters": centres}}
    run_id = int(client.post("/api/v1/runs", json=body, headers=headers).json()["id"])
    while client.get(f"/api/v1/runs/{run_id}", headers=headers).json()["status"] in (
        "queued",
        "running",
    ):
        time.sleep(0.1)
    return run_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cols", type=int, default=10)
    parser.add_argument("--centres", type=int, default=20)
    args = parser.parse_args()
    X, y = make_blobs(args.rows, n_features=args.cols, centers=args.centres, random_state=7)
    buffer = io.BytesIO()
    np.save(buffer, X.astype(np.float32))
    body = buffer.getvalue()
    print(
        f"bench_inline_runs: {args.rows:,} x {args.cols} float32 blobs ({args.centres} "
        "centres), CEC with its defaults, inline executor"
    )
    print("| fitted | run | POST to succeeded (s) | peak RSS growth (MiB) | ARI | metrics say |")
    print("|---|---|---|---|---|---|")
    times: dict[str, list[float]] = {}
    for name, min_items in (("in memory", args.rows + 1), ("over the chunks", args.rows)):
        workdir = tempfile.mkdtemp(prefix="bench-inline-")
        settings = Settings(
            database_url=f"sqlite:///{workdir}/db.sqlite",
            data_dir=workdir,
            admin_password=PASSWORD,
            load_demo_data=False,
            distributed_min_items=min_items,
        )
        with TestClient(create_app(settings)) as client:
            token = client.post(
                "/api/v1/auth/token", data={"username": "admin", "password": PASSWORD}
            ).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            project = client.post("/api/v1/projects", json={"name": "p"}, headers=headers)
            dataset = client.post(
                f"/api/v1/projects/{project.json()['id']}/datasets",
                files={"file": ("blobs.npy", body, "application/octet-stream")},
                headers=headers,
            ).json()["id"]
            for k in range(2):
                run_id, seconds, grown = with_peak_rss(
                    os.getpid(),
                    lambda: _run(client, headers, dataset, args.centres),  # noqa: B023 - called at once
                    every_s=0.02,
                )
                answer = client.get(f"/api/v1/runs/{run_id}/result.npy", headers=headers)
                labels = np.load(io.BytesIO(answer.content))
                metrics = client.get(f"/api/v1/runs/{run_id}/result", headers=headers).json()
                execution = metrics["metrics"].get("execution", {}).get("execution", "-")
                times.setdefault(name, []).append(seconds)
                print(
                    f"| {name} | {k + 1} | {seconds:.1f} | {grown / 2**20:.0f} "
                    f"| {adjusted_rand_score(y, labels):.3f} | {execution} |"
                )
    ratio = min(times["over the chunks"]) / min(times["in memory"])
    print(f"over the chunks / in memory (best of two): {ratio:.2f}x")


if __name__ == "__main__":
    main()
