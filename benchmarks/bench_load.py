"""Load on a live server (printed, not asserted): concurrent annotation writers, a burst of
queued runs, and hundreds of open progress streams, each with `/health` latency beside it.

    .venv/bin/python -m benchmarks.bench_load [--writers 20] [--seconds 10] [--streams 200]
                                              [--database-url ...]

Prints acknowledged vs stored annotations (nothing acknowledged may be lost), p50/p99 write
latency, how a burst of runs is accepted or refused (429 beyond the per-user limit) and ends,
and `/health` latency while the streams are open.
"""

import argparse
import asyncio
import io
import time

import httpx
import numpy as np
from sklearn.datasets import make_blobs

from benchmarks._server import LiveServer, live_server_from_command_line, run_request

TERMINAL = {"succeeded", "failed", "cancelled"}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


async def health_latencies(client: httpx.AsyncClient, n: int = 10) -> list[float]:
    latencies = []
    for _ in range(n):
        started = time.perf_counter()
        (await client.get("/health")).raise_for_status()
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.1)
    return latencies


async def upload(client: httpx.AsyncClient, n: int) -> int:
    x, _ = make_blobs(n_samples=n, centers=20, n_features=5, random_state=0)
    buffer = io.BytesIO()
    np.save(buffer, x)
    project = (await client.post("/projects", json={"name": "load"})).json()
    response = await client.post(
        f"/projects/{project['id']}/datasets",
        files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
    )
    response.raise_for_status()
    return int(response.json()["id"])


async def writers(client: httpx.AsyncClient, dataset_id: int, n: int, seconds: float) -> None:
    latencies: list[float] = []
    acknowledged = 0
    failures = 0
    stop = time.monotonic() + seconds

    async def writer(k: int) -> None:
        nonlocal acknowledged, failures
        rng = np.random.default_rng(k)
        while time.monotonic() < stop:
            items = rng.choice(4000, size=5, replace=False).tolist()
            started = time.perf_counter()
            response = await client.post(
                f"/datasets/{dataset_id}/annotations",
                json={"kind": "label", "items": items, "label": f"w{k}"},
            )
            latencies.append(time.perf_counter() - started)
            if response.status_code == 201:
                acknowledged += 1
            else:
                failures += 1

    tasks = [asyncio.create_task(writer(k)) for k in range(n)]
    health = await health_latencies(client, n=int(seconds * 5))
    await asyncio.gather(*tasks)
    page = (await client.get(f"/datasets/{dataset_id}/annotations", params={"limit": 1})).json()
    print(f"\n{n} annotation writers for {seconds:.0f} s")
    print(f"  acknowledged {acknowledged}, stored {page['total']}, refused or failed {failures}")
    print(f"  write latency p50 {pct(latencies, 50):.3f} s, p99 {pct(latencies, 99):.3f} s")
    print(f"  /health p50 {pct(health, 50):.3f} s, max {max(health):.3f} s")


async def run_burst(client: httpx.AsyncClient, dataset_id: int, n: int) -> None:
    body = {"dataset_id": dataset_id, "algorithm": "cec", "params": {"n_clusters": 5, "n_init": 1}}
    started = time.perf_counter()
    responses = await asyncio.gather(*(client.post("/runs", json=body) for _ in range(n)))
    posted = time.perf_counter() - started
    accepted = [r.json()["id"] for r in responses if r.status_code == 202]
    refused = sum(r.status_code == 429 for r in responses)
    health = await health_latencies(client)
    while True:
        states = [(await client.get(f"/runs/{i}")).json()["status"] for i in accepted]
        if all(s in TERMINAL for s in states):
            break
        await asyncio.sleep(0.5)
    print(f"\n{n} runs posted at once ({posted:.2f} s)")
    print(
        f"  accepted {len(accepted)}, refused with 429 {refused}, "
        f"other {n - len(accepted) - refused}"
    )
    print(f"  ended: {', '.join(f'{s} {states.count(s)}' for s in sorted(set(states)))}")
    print(f"  drained in {time.perf_counter() - started:.1f} s; /health max {max(health):.3f} s")


async def streams(client: httpx.AsyncClient, dataset_id: int, n: int) -> None:
    run = await client.post(
        "/runs",
        json=run_request(dataset_id, "cec", n_clusters=40, n_init=100, max_iter=1000),
    )
    run.raise_for_status()
    run_id = run.json()["id"]
    finals: list[str] = []

    async def follow() -> None:
        last = None
        async with client.stream("GET", f"/runs/{run_id}/events") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    last = line
        finals.append(last or "")

    tasks = [asyncio.create_task(follow()) for _ in range(n)]
    await asyncio.sleep(1.0)
    health = await health_latencies(client, n=20)
    await client.post(f"/runs/{run_id}/cancel")
    await asyncio.gather(*tasks)
    final = (await client.get(f"/runs/{run_id}")).json()["status"]
    ended = sum(f'"status": "{final}"' in f for f in finals)
    print(f"\n{n} open progress streams on one run")
    print(
        f"  /health p50 {pct(health, 50):.3f} s, p99 {pct(health, 99):.3f} s, "
        f"max {max(health):.3f} s"
    )
    print(f"  run ended {final}; streams that saw it: {ended}/{n}")


async def main_async(server: LiveServer, args: argparse.Namespace) -> None:
    limits = httpx.Limits(max_connections=args.streams + args.writers + 20)
    async with httpx.AsyncClient(
        base_url=server.base, headers=server.headers, timeout=300, limits=limits
    ) as client:
        dataset_id = await upload(client, 4000)
        await writers(client, dataset_id, args.writers, args.seconds)
        await run_burst(client, dataset_id, args.runs)
        await streams(client, dataset_id, args.streams)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--streams", type=int, default=200)
    with live_server_from_command_line(parser) as (args, server):
        asyncio.run(main_async(server, args))


if __name__ == "__main__":
    main()
