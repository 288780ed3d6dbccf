"""How fast the real server stops (SIGTERM) with progress streams open on a running run, and
whether each stream is told (printed, not asserted).

    .venv/bin/python -m benchmarks.bench_shutdown [--streams 0 100] [--images 12 --side 2048]
                                                  [--slide]

For each count: `python -m app serve` with one long CEC run, that many `GET /runs/{id}/events`
streams open, then SIGTERM; prints the seconds to exit and how many streams ended with the
`shutdown` event (the rest were cut). With `--images`, that many pictures are uploaded first
and their featurizations are under way (three workers) when the signal comes; with `--slide`
they are tiled TIFFs past the whole-image limit (slides, featurized block by block from the
store). Target: under 5 s with 50 streams and 12 featurizations, every stream told (before, a
12,000 x 12,000 slide featurizing still held the server after 10 s).
"""

import argparse
import io
import signal
import threading
import time
from dataclasses import dataclass, field

import httpx
import numpy as np
import tifffile
from PIL import Image
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


def start_featurizations(server: LiveServer, images: int, side: int, slide: bool) -> None:
    """`images` pictures (or slides) of `side` x `side` uploaded, so many featurizations
    queued; returns once one is under way."""
    rng = np.random.default_rng(0)
    with httpx.Client(base_url=server.base, headers=server.headers, timeout=600) as api:
        project = api.post("/projects", json={"name": "pictures"}).json()["id"]
        ids = []
        for k in range(images):
            coarse = rng.integers(0, 256, (side // 16, side // 16, 3), dtype=np.uint8)
            pixels = np.kron(coarse, np.ones((16, 16, 1), dtype=np.uint8))
            buffer = io.BytesIO()
            if slide:
                tifffile.imwrite(
                    buffer, pixels, tile=(512, 512), compression="zlib", photometric="rgb"
                )
                name, kind = f"s{k}.tif", "image/tiff"
            else:
                Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
                name, kind = f"p{k}.png", "image/png"
            del pixels
            made = api.post(
                f"/projects/{project}/datasets", files={"file": (name, buffer.getvalue(), kind)}
            )
            made.raise_for_status()
            ids.append(made.json()["id"])
        while not any(
            (api.get(f"/datasets/{i}").json().get("featurization") or {}).get("progress", 0) > 0
            for i in ids
        ):
            time.sleep(0.2)


def stop_with_streams(
    count: int, images: int = 0, side: int = 2048, deadline_s: float = 60, slide: bool = False
) -> tuple[float, Streams, str]:
    """Seconds from SIGTERM to exit with `count` streams open on a long run and `images`
    featurizations queued or running, the streams, the server log."""
    workers = "1" if images == 0 else "3"
    with live_server(WARM_KERNELS_ON_START="false", INLINE_WORKERS=workers) as server:
        if images:
            start_featurizations(server, images, side, slide)
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
    parser.add_argument("--images", type=int, default=0, help="featurizations queued too")
    parser.add_argument("--side", type=int, default=2048, help="of each image, in pixels")
    parser.add_argument("--slide", action="store_true", help="tiled TIFFs past the whole limit")
    args = parser.parse_args()
    print(
        "| progress streams open | featurizations | SIGTERM to exit (s) "
        "| streams told (`shutdown` event) |"
    )
    print("|---:|---:|---:|---:|")
    for count in args.streams:
        seconds, streams, _ = stop_with_streams(count, args.images, args.side, slide=args.slide)
        print(f"| {count} | {args.images} | {seconds:.2f} | {streams.told()} of {count} |")


if __name__ == "__main__":
    main()
