"""How fast the real server stops (SIGTERM) with progress streams open on a running run, and
whether each stream is told (printed, not asserted).

    .venv/bin/python -m benchmarks.bench_shutdown [--streams 0 100]

For each count: `python -m app serve` with one long CEC run, that many `GET /runs/{id}/events`
streams open, then SIGTERM; prints the seconds to exit and how many streams ended with the
`shutdown` event (the rest were cut).
"""

import argparse
import io
import signal
import threading
import time
from dataclasses import dataclass, field

import httpx
import numpy as np
from sklearn.datasets import make_blobs

from benchmarks._server import LiveServer, live_server


def start_long_run(server: LiveServer) -> int:
    """A CEC run that keeps the server's one worker busy for a while."""
    x, _ = make_blobs(n_samples=100_000, centers=30, n_features=8, random_state=0)
    buffer = io.BytesIO()
    np.save(buffer, x.astype(np.float32))
    with httpx.Client(base_url=server.base, headers=server.headers, timeout=60) as api:
        project = api.post("/projects", json={"name": "streams"}).json()["id"]
        dataset = api.post(
            f"/projects/{project}/datasets",
            files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
        ).json()["id"]
        params = {"n_clusters": 30, "n_init": 50, "max_iter": 500}
        run = api.post("/runs", json={"dataset_id": dataset, "algorithm": "cec", "params": params})
        run.raise_for_status()
        return int(run.json()["id"])


@dataclass
class Streams:
    """`count` progress streams of one run, each keeping its `event:` and `retry:` lines."""

    server: LiveServer
    run_id: int
    count: int
    events: list[list[str]] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def open(self) -> None:
        """Returns once every stream has had its first event."""
        opened = threading.Barrier(self.count + 1, timeout=120)
        self.events = [[] for _ in range(self.count)]

        def listen(k: int) -> None:
            url = f"{self.server.base}/runs/{self.run_id}/events"
            with httpx.stream("GET", url, headers=self.server.headers, timeout=300) as response:
                first = True
                for line in response.iter_lines():
                    if line.startswith(("event:", "retry:")):
                        self.events[k].append(line)
                    if first and line.startswith("data:"):
                        first = False
                        opened.wait()

        self.threads = [threading.Thread(target=listen, args=(k,)) for k in range(self.count)]
        for thread in self.threads:
            thread.start()
        if self.count:
            opened.wait()

    def join(self, timeout: float) -> None:
        for thread in self.threads:
            thread.join(timeout)

    def told(self) -> int:
        return sum(seen[-2:] == ["event: shutdown", "retry: 3000"] for seen in self.events)


def stop_with_streams(count: int, deadline_s: float = 60) -> tuple[float, Streams, str]:
    """Seconds from SIGTERM to exit with `count` streams open, the streams, the server log."""
    with live_server(WARM_KERNELS_ON_START="false", INLINE_WORKERS="1") as server:
        streams = Streams(server, start_long_run(server), count)
        streams.open()
        stopping = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=deadline_s)
        stopped_after = time.monotonic() - stopping
        streams.join(10)
        return stopped_after, streams, server.log.read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[0, 100])
    args = parser.parse_args()
    print("| progress streams open | SIGTERM to exit (s) | streams told (`shutdown` event) |")
    print("|---:|---:|---:|")
    for count in args.streams:
        seconds, streams, _ = stop_with_streams(count)
        print(f"| {count} | {seconds:.2f} | {streams.told()} of {count} |")


if __name__ == "__main__":
    main()
