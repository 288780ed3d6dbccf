"""Crafted files an attacker (or an unlucky instrument) sends, on a live server (printed, not
asserted): how fast each is answered, what it costs the server, and whether anything it left
fails later in the background.

    .venv/bin/python -m benchmarks.bench_crafted_files [--database-url ...]

The server is started with a 64 MiB upload limit (MAX_UPLOAD_BYTES), so that the chunked
bodies past it stay quick to send; the check is the same at the default 1 GiB.

Per file: the answer's status and seconds, the server's peak memory above where it stood
before (sampled every 10 ms while the request runs), the bytes the server process wrote (its
spooled upload included, `/proc/<pid>/io` wchar) and how much the data directory grew. Each
file is sent once the server is idle (what earlier files queued has finished), after one
unmeasured warm-up upload. At the end, every dataset the suite kept is waited for: a
featurization failing in the background counts against the file that queued it.

Targets: every file answered within 1 s, memory and disk growth under 50 MB each, 0
background failures (before: a few-kB sparse TIFF was taken as a slide of hundreds of
megapixels, a 1 MB stack used +973 MB, 16 MB of OME-XML took 24.8 s and +824 MB, float pixels
near the end of their range were taken and failed in the background, and a chunked body was
spooled whole, 256 MiB of it without credentials, before it was refused).
"""

import argparse
import io
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import tifffile

from benchmarks._peak_memory import with_peak_rss
from benchmarks._server import LiveServer, add_database_option, live_server

MB = 1_000_000
MIB = 1024 * 1024
# The upload limit the server is started with (the default is 1 GiB: the same check, slower).
LIMIT = 64 * MIB


def float_tiff(dtype: str, extreme: float) -> bytes:
    """Finite pixels spanning nearly the whole range of their type."""
    rng = np.random.default_rng(0)
    pixels = (rng.uniform(-1, 1, (256, 256)) * extreme).astype(dtype)
    return _tiff(pixels)


def huge_ome_xml(megabytes: int) -> bytes:
    xml = '<?xml version="1.0"?><OME><!--' + "x" * (megabytes * MB) + "--></OME>"
    return _tiff(np.zeros((8, 8), dtype=np.uint16), description=xml, metadata=None)


def zero_stack(planes: int, side: int) -> bytes:
    """``planes`` planes of zeros: a few kB per megapixel compressed."""
    stack = np.zeros((planes, side, side), dtype=np.uint8)
    return _tiff(stack, metadata={"axes": "ZYX"}, compression="zlib")


def sparse_slide(side: int, tile: int = 256) -> bytes:
    """A tiled TIFF of side x side whose tiles, all but the first, are left out (byte count
    0): a small file declaring a slide of side**2 pixels."""
    n = math.ceil(side / tile) ** 2
    zeros = np.zeros((tile, tile), dtype=np.uint8)
    buffer = io.BytesIO()
    tifffile.imwrite(
        buffer,
        data=(zeros for _ in range(n)),
        shape=(side, side),
        dtype="uint8",
        tile=(tile, tile),
        compression="zlib",
    )
    data = bytearray(buffer.getvalue())
    with tifffile.TiffFile(io.BytesIO(bytes(data))) as tif:
        page = tif.pages[0]
        assert isinstance(page, tifffile.TiffPage)
        counts = page.tags["TileByteCounts"]
        offset, count = counts.valueoffset, counts.count
        size = counts.valuebytecount // count
    data[offset + size : offset + count * size] = bytes((count - 1) * size)
    return bytes(data)


def _tiff(array: np.ndarray, **options: object) -> bytes:
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, array, **options)  # type: ignore[arg-type]
    return buffer.getvalue()


class ChunkedBody:
    """A multipart CSV body of ``megabytes``, sent chunked (no Content-Length)."""

    boundary = "craftedboundary"

    def __init__(self, megabytes: int) -> None:
        self.megabytes = megabytes

    def __iter__(self) -> Iterator[bytes]:
        yield (
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="big.csv"\r\nContent-Type: text/csv\r\n\r\na,b\r\n'
        ).encode()
        for _ in range(self.megabytes):
            yield b"1,2\r\n" * (MIB // 5)
        yield f"\r\n--{self.boundary}--\r\n".encode()


@dataclass
class Answer:
    status: str
    seconds: float
    memory_mb: float
    written_mb: float
    disk_mb: float
    datasets: list[int]


def measured(server: LiveServer, send: Callable[[], httpx.Response | None]) -> Answer:
    before_written = _written(server.pid)
    before_disk = _disk(server.workdir)
    response, seconds, rss_growth = with_peak_rss(server.pid, send)
    made: list[int] = []
    if response is None:
        status = "connection closed"
    else:
        status = str(response.status_code)
        if response.status_code == 201:
            body = response.json()
            made = [item["id"] for item in body.get("items", [body])]
        else:
            status += f" {response.json().get('detail', '')}"[:70]
    return Answer(
        status=status,
        seconds=seconds,
        memory_mb=rss_growth / MB,
        written_mb=(_written(server.pid) - before_written) / MB,
        disk_mb=(_disk(server.workdir) - before_disk) / MB,
        datasets=made,
    )


def _written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def _disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


WAIT_S = 600.0


def background_failures(api: httpx.Client, ids: list[int]) -> tuple[int, int]:
    """How many of ``ids`` ended ``failed``, and how many still featurize, once none does or
    WAIT_S has passed."""
    deadline = time.monotonic() + WAIT_S
    while True:
        statuses = [api.get(f"/datasets/{i}").json()["status"] for i in ids]
        if "featurizing" not in statuses or time.monotonic() > deadline:
            return statuses.count("failed"), statuses.count("featurizing")
        time.sleep(2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_option(parser)
    args = parser.parse_args()
    with live_server(args.database_url, MAX_UPLOAD_BYTES=str(LIMIT)) as server:
        api = httpx.Client(base_url=server.base, headers=server.headers, timeout=600)
        project = api.post("/projects", json={"name": "crafted"}).json()["id"]
        datasets = f"/projects/{project}/datasets"

        def upload(name: str, data: bytes) -> Callable[[], httpx.Response]:
            return lambda: api.post(datasets, files={"file": (name, data, "image/tiff")})

        def collection(name: str, data: bytes) -> Callable[[], httpx.Response]:
            return lambda: api.post(
                f"/projects/{project}/collections",
                files={"files": (name, data, "image/tiff")},
                data={"name": name},
            )

        def chunked(headers: dict[str, str]) -> Callable[[], httpx.Response | None]:
            body = ChunkedBody(3 * LIMIT // MIB)
            content_type = f"multipart/form-data; boundary={body.boundary}"

            def send() -> httpx.Response | None:
                try:
                    return httpx.post(
                        f"{server.base}{datasets}",
                        content=iter(body),
                        headers={**headers, "Content-Type": content_type},
                        timeout=600,
                    )
                except httpx.TransportError:
                    return None  # the server closed the connection before the body was sent

            return send

        cases: list[tuple[str, int, Callable[[], httpx.Response | None], bool]] = []

        def case(
            name: str, size: int, send: Callable[[], httpx.Response | None], keep: bool = True
        ) -> None:
            cases.append((name, size, send, keep))

        for name, data in [
            ("float64 pixels near +-1e308", float_tiff("float64", 1e308)),
            ("float32 pixels near +-3e38", float_tiff("float32", 3e38)),
            ("16 MB of OME-XML", huge_ome_xml(16)),
            ("sparse TIFF declaring 900 MP", sparse_slide(30_000)),
        ]:
            case(name, len(data), upload(name.replace(" ", "_") + ".tif", data))
        # A gigabyte of zeros in a 1 MB file: taken (it is within the decoded budget), then
        # deleted once answered, so that its 1,000 featurizations do not hold the suite.
        data = zero_stack(1000, 1000)
        case(
            "1,000 planes of 1,000 x 1,000 zeros (coll.)",
            len(data),
            collection("z.tif", data),
            False,
        )
        for name, data in [
            ("1,000 planes of 32 x 32 zeros (coll.)", zero_stack(1000, 32)),
            ("1,001 planes of 32 x 32 zeros (coll.)", zero_stack(1001, 32)),
        ]:
            case(name, len(data), collection(name[:20] + ".tif", data))
        case("192 MiB chunked (limit 64), no credentials", 3 * LIMIT, chunked({}))
        case("192 MiB chunked (limit 64), signed in", 3 * LIMIT, chunked(server.headers))

        print(
            f"{'file':<46} {'bytes':>11} {'answer':<40} {'s':>6} {'+MB mem':>8} "
            f"{'MB written':>10} {'+MB disk':>8}"
        )
        # Once, unmeasured: what the first image upload loads (modules, kernels) is not
        # any file's cost.
        upload("warm.tif", float_tiff("float32", 1.0))().raise_for_status()
        made: list[int] = []
        for name, size, send, keep in cases:
            background_failures(api, made)  # the server idle: only this file's cost is seen
            answer = measured(server, send)
            print(
                f"{name:<46} {size:>11,} {answer.status[:40]:<40} {answer.seconds:>6.2f} "
                f"{answer.memory_mb:>8.1f} {answer.written_mb:>10.1f} {answer.disk_mb:>8.1f}",
                flush=True,
            )
            if keep:
                made += answer.datasets
            else:
                for dataset_id in answer.datasets:
                    api.delete(f"/datasets/{dataset_id}").raise_for_status()
        failed, featurizing = background_failures(api, made)
        print(
            f"datasets kept: {len(made)}; failed in the background: {failed}; "
            f"still featurizing after {WAIT_S:.0f} s: {featurizing}"
        )


if __name__ == "__main__":
    main()
