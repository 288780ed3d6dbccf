"""A table imported by reference beside the same table uploaded, on a live server (printed,
never asserted).

The table (blobs, float32) lies on an S3-compatible server started here (moto, loopback HTTP)
as a Parquet dataset of ``--files`` objects under a prefix the server's IMPORT_SOURCES opens;
the same rows are uploaded as one Parquet file. For each: the time to 201, what the array
store grew by, the server's peak resident memory during the request; then a CEC run on each
(POST to succeeded) with its ARI against the blobs' classes, and whether both runs gave the same
labels. Targets: the store grows by under 1% of the source on import; the run on the source
takes within 1.2x the run on the uploaded copy, with the same labels.

    .venv/bin/python -m benchmarks.bench_import [--rows 2000000] [--cols 10] [--files 20]
"""

import argparse
import io
import json
import logging
import time
from typing import Any

import boto3
import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from moto.server import ThreadedMotoServer
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from benchmarks._peak_memory import with_peak_rss
from benchmarks._server import LiveServer, live_server, run_request

BUCKET = "bench-sources"
PREFIX = "imports/blobs/"
KEY, SECRET, REGION = "bench-key", "bench-secret", "us-east-1"
CENTRES = 8


def _store_bytes(server: LiveServer) -> int:
    root = server.workdir / "var" / "arrays"
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def _parquet(X: np.ndarray, rows: slice) -> bytes:
    buffer = io.BytesIO()
    table = pa.table({f"f{j}": X[rows, j] for j in range(X.shape[1])})
    pq.write_table(table, buffer, row_group_size=262_144)
    return buffer.getvalue()


def _run(client: httpx.Client, dataset_id: int) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    run = client.post("/runs", json=run_request(dataset_id, "cec", n_clusters=CENTRES, n_init=1))
    run.raise_for_status()
    run_id = run.json()["id"]
    while (status := client.get(f"/runs/{run_id}").json()["status"]) not in (
        "succeeded", "failed", "cancelled",
    ):  # fmt: skip
        time.sleep(0.2)
    seconds = time.perf_counter() - started
    if status != "succeeded":
        raise RuntimeError(f"run {run_id} {status}: {client.get(f'/runs/{run_id}').json()}")
    labels = client.get(f"/runs/{run_id}/result", params={"format": "npy"})
    labels.raise_for_status()
    return seconds, np.load(io.BytesIO(labels.content))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cols", type=int, default=10)
    parser.add_argument("--files", type=int, default=20)
    args = parser.parse_args()
    X, y = make_blobs(args.rows, n_features=args.cols, centers=CENTRES, random_state=7)
    X = X.astype(np.float32)

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
        region_name=REGION,
    )  # fmt: skip
    s3.create_bucket(Bucket=BUCKET)
    source_bytes = 0
    for k, part in enumerate(np.array_split(np.arange(args.rows), args.files)):
        body = _parquet(X, slice(int(part[0]), int(part[-1]) + 1))
        source_bytes += len(body)
        s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}part-{k:05d}.parquet", Body=body)
    whole = _parquet(X, slice(None))
    options: dict[str, Any] = {
        "key": KEY, "secret": SECRET, "endpoint_url": endpoint,
        "client_kwargs": {"region_name": REGION},
    }  # fmt: skip
    sources = json.dumps({f"s3://{BUCKET}/imports/": options})
    print(
        f"bench_import: {args.rows:,} x {args.cols} float32 blobs ({CENTRES} centres); source: "
        f"{args.files} Parquet objects, {source_bytes / 2**20:.0f} MiB, on a local S3 server"
    )
    try:
        with live_server(IMPORT_SOURCES=sources) as server:
            client = httpx.Client(base_url=server.base, headers=server.headers, timeout=3600)
            project = client.post("/projects", json={"name": "import"}).json()["id"]
            # Once, unmeasured: the engine's kernels compile on the first run, which is no
            # one table's cost.
            warm = io.BytesIO()
            np.save(warm, X[:2_000])
            small = client.post(
                f"/projects/{project}/datasets",
                files={"file": ("warm.npy", warm.getvalue(), "application/octet-stream")},
            )
            small.raise_for_status()
            _run(client, int(small.json()["id"]))
            rows: list[tuple[str, float, int, int, float, float, np.ndarray]] = []
            for name, send in (
                ("uploaded (one Parquet file)", lambda: client.post(
                    f"/projects/{project}/datasets",
                    files={"file": ("blobs.parquet", whole, "application/octet-stream")},
                )),
                ("imported by reference (S3 prefix)", lambda: client.post(
                    f"/projects/{project}/datasets/import",
                    json={"name": "blobs", "url": f"s3://{BUCKET}/{PREFIX}"},
                )),
            ):  # fmt: skip
                store_before = _store_bytes(server)
                response, seconds, rss = with_peak_rss(server.pid, send, every_s=0.02)
                response.raise_for_status()
                grown = _store_bytes(server) - store_before
                run_s, labels = _run(client, int(response.json()["id"]))
                ari = adjusted_rand_score(y, labels)
                rows.append((name, seconds, grown, rss, run_s, ari, labels))
    finally:
        moto.stop()

    print(
        "| dataset | to 201 (s) | store grew (MiB) | of the source | peak server RSS growth (MiB) "
        "| CEC run, POST to succeeded (s) | ARI |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, seconds, grown, rss, run_s, ari, _ in rows:
        print(
            f"| {name} | {seconds:.1f} | {grown / 2**20:.1f} | {100 * grown / source_bytes:.1f}% "
            f"| {rss / 2**20:.0f} | {run_s:.1f} | {ari:.3f} |"
        )
    (_, _, _, _, upload_run, _, upload_labels), (_, _, _, _, import_run, _, import_labels) = rows
    print(
        f"run on the source / run on the uploaded copy: {import_run / upload_run:.2f}x "
        f"(target 1.2x); same labels: {bool(np.array_equal(upload_labels, import_labels))}"
    )


if __name__ == "__main__":
    main()
