"""Other users' writes during one user's long upload, on a live server (printed, not asserted).

    .venv/bin/python -m benchmarks.bench_uploads_beside [--columns 4000] [--planes 200]
                                                        [--side 512] [--database-url ...]

Alice uploads, one after the other, a wide CSV (20 rows x ``--columns`` columns: every column
is checked and summarised, so it takes long for its size) and a TIFF stack of ``--planes``
planes as a collection (one image dataset per plane, each stored with its Deep Zoom pyramid).
While each upload is in flight, Bob, another editor of the same project, posts an annotation
and signs in, in turn, as fast as the answers come. Printed per upload: how long it took,
Bob's requests by status, their p50/p99/max latency.

Target: none of Bob's requests fails (before, the upload held SQLite's write lock from its
first insert to its end: Bob's writes waited the 10 s busy timeout and then got 500) and
their p99 stays under 1 s.
"""

import argparse
import io
import threading
import time
from collections import Counter
from collections.abc import Callable

import httpx
import numpy as np
import tifffile

from benchmarks._server import LiveServer, live_server_from_command_line

PASSWORD = "beside-pass-123"


def wide_csv(columns: int, rows: int = 20) -> bytes:
    values = np.random.default_rng(0).normal(size=(rows, columns))
    header = ",".join(f"c{j}" for j in range(columns))
    body = "\n".join(",".join(f"{v:.4f}" for v in row) for row in values)
    return f"{header}\n{body}\n".encode()


def tiff_stack(planes: int, side: int) -> bytes:
    rng = np.random.default_rng(1)
    stack = rng.integers(0, 4096, size=(planes, side, side), dtype=np.uint16)
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, stack, metadata={"axes": "ZYX"})
    return buffer.getvalue()


def editor(server: LiveServer, project_id: int, name: str) -> httpx.Client:
    admin = httpx.Client(base_url=server.base, headers=server.headers, timeout=120)
    admin.post("/users", json={"username": name, "password": PASSWORD}).raise_for_status()
    admin.put(
        f"/projects/{project_id}/members", json={"username": name, "role": "editor"}
    ).raise_for_status()
    token = admin.post("/auth/token", data={"username": name, "password": PASSWORD})
    headers = {"Authorization": f"Bearer {token.raise_for_status().json()['access_token']}"}
    return httpx.Client(base_url=server.base, headers=headers, timeout=120)


def beside(
    bob: httpx.Client, table_id: int, upload: Callable[[], httpx.Response]
) -> tuple[float, Counter[int], list[float]]:
    """Bob's requests while `upload` is in flight: seconds the upload took, Bob's status
    codes, his latencies."""
    done = threading.Event()
    statuses: Counter[int] = Counter()
    latencies: list[float] = []

    def bob_works() -> None:
        k = 0
        while not done.is_set():
            started = time.perf_counter()
            if k % 2 == 0:
                response = bob.post(
                    f"/datasets/{table_id}/annotations",
                    json={"kind": "label", "items": [k % 90], "label": "bob"},
                )
            else:
                response = bob.post("/auth/token", data={"username": "bob", "password": PASSWORD})
            latencies.append(time.perf_counter() - started)
            statuses[response.status_code] += 1
            k += 1

    worker = threading.Thread(target=bob_works)
    started = time.perf_counter()
    worker.start()
    try:
        response = upload()
    finally:
        done.set()
        worker.join()
    seconds = time.perf_counter() - started
    if response.status_code != 201:
        raise RuntimeError(f"the upload was answered {response.status_code}: {response.text}")
    return seconds, statuses, latencies


HEADER = (
    "| upload | to its 201 (s) | other user's requests | failed | p50 (s) | p99 (s) | max (s) "
    "| target (0 failed, p99 < 1 s) |\n|---|---:|---:|---:|---:|---:|---:|---|"
)


def report(what: str, seconds: float, statuses: Counter[int], latencies: list[float]) -> None:
    """One row of the table: the upload, then the other user's requests while it ran."""
    failed = sum(n for code, n in statuses.items() if code >= 400)
    p50, p99 = np.percentile(latencies, [50, 99]) if latencies else (float("nan"),) * 2
    met = "met" if failed == 0 and p99 < 1 else "NOT met"
    print(
        f"| {what} | {seconds:.1f} | {sum(statuses.values())} | {failed} | {p50:.3f} "
        f"| {p99:.3f} | {max(latencies):.3f} | {met} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=4000)
    parser.add_argument("--planes", type=int, default=200)
    parser.add_argument("--side", type=int, default=512)
    with live_server_from_command_line(parser) as (args, server):
        admin = httpx.Client(base_url=server.base, headers=server.headers, timeout=600)
        project_id = admin.post("/projects", json={"name": "shared"}).json()["id"]
        alice, bob = editor(server, project_id, "alice"), editor(server, project_id, "bob")
        alice.timeout = httpx.Timeout(600)
        small = "a,b\n" + "\n".join(f"{i},{i % 7}" for i in range(90))
        table = bob.post(
            f"/projects/{project_id}/datasets", files={"file": ("bob.csv", small, "text/csv")}
        )
        table_id = int(table.raise_for_status().json()["id"])

        csv = wide_csv(args.columns)
        print(HEADER)
        report(
            f"wide CSV (20 x {args.columns}, {len(csv) / 1e3:.0f} kB)",
            *beside(
                bob,
                table_id,
                lambda: alice.post(
                    f"/projects/{project_id}/datasets",
                    files={"file": ("wide.csv", csv, "text/csv")},
                ),
            ),
        )
        stack = tiff_stack(args.planes, args.side)
        report(
            f"collection ({args.planes} planes of {args.side}^2 uint16, {len(stack) / 1e6:.0f} MB)",
            *beside(
                bob,
                table_id,
                lambda: alice.post(
                    f"/projects/{project_id}/collections",
                    files={"files": ("stack.tif", stack, "image/tiff")},
                    data={"name": "stack"},
                ),
            ),
        )


if __name__ == "__main__":
    main()
