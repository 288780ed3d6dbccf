"""The expert's loop through the API at 100,000 items (issue 38): what a first run costs, and
what one act costs after it.

On a 100k x 10 table of 8 Gaussian blobs with 20 labeled items per blob, against the real
`python -m app serve` (engine warmed first on a small dataset, so no compilation is timed):

* the first run with ``params: {}`` (target: under 5 s to ``succeeded``);
* 20 acts, each POST a label on 5 items of one blob (their true class) and POST a run with
  ``warm_start: true`` as the workspace's Live switch sends it, until ``succeeded`` and the
  labels fetched as NPY (target: p50 under 0.8 s);
* the ARI after the 20 acts beside a full fresh fit (``params: {}``) on the same annotations
  in the same run (target: within 0.02).

    .venv/bin/python -m benchmarks.bench_loop [--size 100000] [--acts 20] [--methods cec-ib ppc]

Printed, not asserted.
"""

import argparse
import io
import statistics
import time
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from benchmarks._server import LiveServer, add_database_option, live_server

BLOBS = 8
LABELED_PER_BLOB = 20
ITEMS_PER_ACT = 5


def upload(client: httpx.Client, server: LiveServer, x: NDArray[np.float64], name: str) -> int:
    project = client.post(f"{server.base}/projects", json={"name": name}).json()
    buffer = io.BytesIO()
    np.save(buffer, x)
    response = client.post(
        f"{server.base}/projects/{project['id']}/datasets",
        files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
        timeout=600,
    )
    response.raise_for_status()
    return int(response.json()["id"])


def label(client: httpx.Client, server: LiveServer, dataset_id: int, items: Any, name: str) -> None:
    client.post(
        f"{server.base}/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [int(i) for i in items], "label": name},
    ).raise_for_status()


def run_to_end(
    client: httpx.Client, server: LiveServer, dataset_id: int, method: str, params: dict[str, Any]
) -> tuple[NDArray[np.int64], dict[str, Any]]:
    """POST a run, poll until it ends, fetch its labels as NPY; (labels, run's metrics)."""
    run = client.post(
        f"{server.base}/runs",
        json={"dataset_id": dataset_id, "algorithm": method, "params": params},
    )
    run.raise_for_status()
    run_id = run.json()["id"]
    while True:
        status = client.get(f"{server.base}/runs/{run_id}").json()["status"]
        if status in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.01)
    if status != "succeeded":
        raise RuntimeError(f"run {run_id} {status}")
    result = client.get(f"{server.base}/runs/{run_id}/result", params={"format": "npy"})
    result.raise_for_status()
    labels = np.load(io.BytesIO(result.content))
    metrics = client.get(f"{server.base}/runs/{run_id}/result").json().get("metrics", {})
    return labels, metrics


def warm_up(client: httpx.Client, server: LiveServer, methods: list[str]) -> None:
    """Compile the engine on a small dataset (the first-run issue's cost, not this one's)."""
    x, y = make_blobs(n_samples=2_000, centers=BLOBS, n_features=10, random_state=1)
    dataset_id = upload(client, server, x, "warm-up")
    for blob in range(BLOBS):
        label(client, server, dataset_id, np.flatnonzero(y == blob)[:5], f"class {blob}")
    for method in methods:
        run_to_end(client, server, dataset_id, method, {})
        run_to_end(client, server, dataset_id, method, {"warm_start": True})


def loop(
    client: httpx.Client, server: LiveServer, method: str, size: int, acts: int
) -> dict[str, float]:
    x, y = make_blobs(n_samples=size, centers=BLOBS, n_features=10, random_state=0)
    rng = np.random.default_rng(0)
    dataset_id = upload(client, server, x, f"{method} loop")
    unlabeled = np.ones(size, dtype=bool)
    for blob in range(BLOBS):
        items = rng.choice(np.flatnonzero(y == blob), LABELED_PER_BLOB, replace=False)
        label(client, server, dataset_id, items, f"class {blob}")
        unlabeled[items] = False
    started = time.perf_counter()
    labels, _ = run_to_end(client, server, dataset_id, method, {})
    first = time.perf_counter() - started
    first_ari = adjusted_rand_score(y, labels)
    seconds: list[float] = []
    fits: list[float] = []
    for _ in range(acts):
        blob = int(rng.integers(BLOBS))
        items = rng.choice(np.flatnonzero((y == blob) & unlabeled), ITEMS_PER_ACT, replace=False)
        unlabeled[items] = False
        started = time.perf_counter()
        label(client, server, dataset_id, items, f"class {blob}")
        labels, metrics = run_to_end(client, server, dataset_id, method, {"warm_start": True})
        seconds.append(time.perf_counter() - started)
        fits.append(metrics["timings"]["fit_s"])
    loop_ari = adjusted_rand_score(y, labels)
    fresh, _ = run_to_end(client, server, dataset_id, method, {})
    return {
        "first": first,
        "first_ari": first_ari,
        "p50": statistics.median(seconds),
        "p95": float(np.percentile(seconds, 95)),
        "fit": statistics.median(fits),
        "loop_ari": loop_ari,
        "fresh_ari": adjusted_rand_score(y, fresh),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--acts", type=int, default=20)
    parser.add_argument("--methods", nargs="+", default=["cec-ib", "ppc"])
    add_database_option(parser)
    args = parser.parse_args()
    header = (
        "| method | first run (s) | ARI | act p50 (s) | act p95 (s) | fit p50 (s) "
        "| ARI after acts | fresh fit ARI | ΔARI |"
    )
    with (
        live_server(args.database_url) as server,
        httpx.Client(headers=server.headers, timeout=600) as client,
    ):
        warm_up(client, server, args.methods)
        print(
            f"{args.size:,} x 10, {BLOBS} blobs, {LABELED_PER_BLOB} labeled per blob; "
            f"{args.acts} acts of {ITEMS_PER_ACT} labels, each followed by a Live re-run"
        )
        print(header)
        print("|---" * header.count(" | ") + "|---|")
        for method in args.methods:
            r = loop(client, server, method, args.size, args.acts)
            cells = [r["first"], r["first_ari"], r["p50"], r["p95"], r["fit"]]
            cells += [r["loop_ari"], r["fresh_ari"], r["loop_ari"] - r["fresh_ari"]]
            print(f"| {method} | " + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    print("targets: first run < 5 s; act p50 < 0.8 s; ARI after acts within 0.02 of a fresh fit")


if __name__ == "__main__":
    main()
