"""Fair share on a live server (printed, not asserted): one user's burst of image uploads (each a
featurization in the background) against another user's small run.

    .venv/bin/python -m benchmarks.bench_fair_share [--images 20] [--side 512] [--repeats 5]

Bob's CEC run on a 90-item table is timed (request to result) on an idle server, then while
Alice's featurizations are queued, on the default executor (3 workers, 2 per user: a worker is
always left for somebody else) and with every worker open to one user
(`INLINE_WORKERS_PER_USER=3`), in the same run. Target (issue 41): under the burst, Bob's run
within 2x its idle time.
"""

import argparse
import io
import statistics
import time

import httpx
import numpy as np
from PIL import Image
from sklearn.datasets import make_blobs

from benchmarks._server import LiveServer, live_server

TERMINAL = {"succeeded", "failed", "cancelled"}
PASSWORD = "fair-share-pass"


def _png(side: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    # Blocks of colour with noise: something a featurization has to work at.
    coarse = rng.integers(0, 256, (side // 32, side // 32, 3), dtype=np.uint8)
    pixels = np.kron(coarse, np.ones((32, 32, 1), dtype=np.uint8))
    pixels = np.clip(pixels + rng.normal(0, 12, pixels.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _user(server: LiveServer, project_id: int, name: str) -> httpx.Client:
    admin = httpx.Client(base_url=server.base, headers=server.headers, timeout=60)
    admin.post("/users", json={"username": name, "password": PASSWORD}).raise_for_status()
    admin.put(
        f"/projects/{project_id}/members", json={"username": name, "role": "editor"}
    ).raise_for_status()
    token = admin.post("/auth/token", data={"username": name, "password": PASSWORD})
    headers = {"Authorization": f"Bearer {token.raise_for_status().json()['access_token']}"}
    return httpx.Client(base_url=server.base, headers=headers, timeout=60)


def _run_seconds(client: httpx.Client, dataset_id: int) -> float:
    started = time.perf_counter()
    run = client.post(
        "/runs",
        json={"dataset_id": dataset_id, "algorithm": "cec", "params": {"n_clusters": 3}},
    )
    run.raise_for_status()
    while (status := client.get(f"/runs/{run.json()['id']}").json()["status"]) not in TERMINAL:
        time.sleep(0.02)
    if status != "succeeded":
        raise RuntimeError(f"Bob's run ended {status}")
    return time.perf_counter() - started


def _featurizing(client: httpx.Client, ids: list[int]) -> int:
    return sum(client.get(f"/datasets/{i}").json()["status"] == "featurizing" for i in ids)


def measure(images: int, side: int, repeats: int, **env: str) -> dict[str, float]:
    with live_server(WARM_KERNELS_ON_START="false", **env) as server:
        admin = httpx.Client(base_url=server.base, headers=server.headers, timeout=60)
        project_id = admin.post("/projects", json={"name": "shared"}).json()["id"]
        alice, bob = _user(server, project_id, "alice"), _user(server, project_id, "bob")
        x, _ = make_blobs(n_samples=90, centers=3, n_features=4, random_state=0)
        csv = "a,b,c,d\n" + "\n".join(",".join(f"{v:.5f}" for v in row) for row in x)
        table = bob.post(
            f"/projects/{project_id}/datasets", files={"file": ("t.csv", csv, "text/csv")}
        )
        table_id = int(table.raise_for_status().json()["id"])
        _run_seconds(bob, table_id)  # loads CEC's kernels: not what is measured
        idle = [_run_seconds(bob, table_id) for _ in range(repeats)]

        burst_started = time.perf_counter()
        uploaded = []
        for i in range(images):
            response = alice.post(
                f"/projects/{project_id}/datasets",
                files={"file": (f"img{i}.png", _png(side, i), "image/png")},
            )
            uploaded.append(int(response.raise_for_status().json()["id"]))
        waiting_before = _featurizing(alice, uploaded)
        busy = [_run_seconds(bob, table_id) for _ in range(repeats)]
        waiting_after = _featurizing(alice, uploaded)
        while _featurizing(alice, uploaded):
            time.sleep(0.2)
        burst_seconds = time.perf_counter() - burst_started
    return {
        "idle": statistics.median(idle),
        "busy": statistics.median(busy),
        "waiting_before": waiting_before,
        "waiting_after": waiting_after,
        "burst": burst_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    setups = {
        "fair share (3 workers, 2 per user)": {},
        "no reserved worker (3 per user)": {"INLINE_WORKERS_PER_USER": "3"},
    }
    print(
        f"Alice uploads {args.images} images of {args.side} x {args.side}; Bob runs CEC "
        f"(k = 3) on 90 items, median of {args.repeats}, request to result\n"
    )
    print(
        "| executor | Bob idle (s) | Bob under the burst (s) | ratio (target <= 2) "
        "| Alice's featurizations waiting (Bob's runs start / end) | Alice's burst done (s) |"
    )
    print("|---|---:|---:|---:|---|---:|")
    for name, env in setups.items():
        r = measure(args.images, args.side, args.repeats, **env)
        print(
            f"| {name} | {r['idle']:.2f} | {r['busy']:.2f} | {r['busy'] / r['idle']:.2f} "
            f"| {r['waiting_before']:.0f} / {r['waiting_after']:.0f} | {r['burst']:.1f} |"
        )


if __name__ == "__main__":
    main()
