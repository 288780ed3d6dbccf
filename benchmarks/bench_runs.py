"""Two service-level measurements against a live server (printed, not asserted):

1. Latency from POSTing an annotation to reading a finished CEC-IB result, on a 10,000-point
   dataset with a warm engine (numba already compiled). Target: p50 under 1 s.
2. Annotation writes from 20 concurrent clients on loopback: requests per second, p50 and p99.

    .venv/bin/python -m benchmarks.bench_runs [--trials 20] [--database-url ...]
"""

import argparse
import io
import statistics
import threading
import time

import httpx
import numpy as np
from sklearn.datasets import make_blobs

from benchmarks._server import LiveServer, live_server_from_command_line, run_request


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def upload(server: LiveServer, n: int) -> int:
    x, _ = make_blobs(n_samples=n, centers=8, n_features=10, random_state=0)
    buffer = io.BytesIO()
    np.save(buffer, x)
    project = httpx.post(
        f"{server.base}/projects", json={"name": "bench"}, headers=server.headers
    ).json()
    response = httpx.post(
        f"{server.base}/projects/{project['id']}/datasets",
        files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
        headers=server.headers,
        timeout=120,
    )
    response.raise_for_status()
    return int(response.json()["id"])


def annotate_then_result(
    client: httpx.Client, server: LiveServer, dataset_id: int, rng: np.random.Generator
) -> float:
    started = time.perf_counter()
    items = rng.choice(10_000, size=50, replace=False).tolist()
    client.post(
        f"{server.base}/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": items, "label": f"L{rng.integers(3)}"},
    ).raise_for_status()
    run = client.post(
        f"{server.base}/runs",
        json=run_request(dataset_id, "cec-ib", n_clusters=8, n_init=1, beta=1.0),
    )
    if run.status_code == 409:  # random labels may conflict; undo and measure the next one
        client.post(f"{server.base}/datasets/{dataset_id}/annotations/undo")
        return float("nan")
    run.raise_for_status()
    run_id = run.json()["id"]
    while client.get(f"{server.base}/runs/{run_id}").json()["status"] not in (
        "succeeded",
        "failed",
        "cancelled",
    ):
        time.sleep(0.01)
    client.get(f"{server.base}/runs/{run_id}/result", params={"format": "npy"}).raise_for_status()
    return time.perf_counter() - started


def latency(server: LiveServer, trials: int) -> None:
    dataset_id = upload(server, 10_000)
    rng = np.random.default_rng(0)
    with httpx.Client(headers=server.headers, timeout=120) as client:
        annotate_then_result(client, server, dataset_id, rng)  # warm-up: numba compiles here
        times = [annotate_then_result(client, server, dataset_id, rng) for _ in range(trials)]
    times = [t for t in times if t == t]
    print(
        f"annotation -> finished CEC-IB result, n=10,000, d=10, k=8, n_init=1 ({len(times)} trials)"
    )
    print("| p50 (s) | p90 (s) | max (s) | target p50 (s) | ratio |")
    print("|---|---|---|---|---|")
    p50 = statistics.median(times)
    print(f"| {p50:.3f} | {percentile(times, 90):.3f} | {max(times):.3f} | 1.0 | {p50:.2f} |")


def concurrent_writes(server: LiveServer, clients: int, per_client: int) -> None:
    dataset_id = upload(server, 10_000)
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        with httpx.Client(headers=server.headers, timeout=60) as client:
            for _ in range(per_client):
                a, b = rng.choice(10_000, size=2, replace=False).tolist()
                started = time.perf_counter()
                response = client.post(
                    f"{server.base}/datasets/{dataset_id}/annotations",
                    json={"kind": "must_link", "items": [a, b], "confidence": 0.9},
                )
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if response.status_code != 201:
                        errors.append(response.status_code)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    final = httpx.get(f"{server.base}/datasets/{dataset_id}", headers=server.headers).json()
    print(f"\nannotation writes: {clients} concurrent clients x {per_client} requests")
    print("| requests/s | p50 (ms) | p99 (ms) | errors | final revision |")
    print("|---|---|---|---|---|")
    print(
        f"| {len(latencies) / wall:.0f} | {1000 * percentile(latencies, 50):.1f} | "
        f"{1000 * percentile(latencies, 99):.1f} | {len(errors)} | {final['revision']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    with live_server_from_command_line(parser) as (args, server):
        latency(server, args.trials)
        concurrent_writes(server, args.clients, args.requests)


if __name__ == "__main__":
    main()
