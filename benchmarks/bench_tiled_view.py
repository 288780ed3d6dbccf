"""Opening and panning a large picture in the image workspace, headless Chromium: drawn from
its Deep Zoom tiles (what a picture above 16 megapixels gets) against the whole picture
downloaded and decoded (`?tiles=0`, what every picture got before), the same page otherwise.

For each: seconds from navigation to the picture drawn (the page ready and, tiled, no tile
still loading), the bytes of picture the page fetched, and frame times (requestAnimationFrame
deltas) while the picture is dragged at 1:1 across a screen and back with the middle button.
Both open the same uploaded picture, alternately, twice each; by default once its
featurization has finished (`--no-wait`: while it runs, as a user who opens the page at once).

    .venv/bin/python -m benchmarks.bench_tiled_view [--size 7000] [--no-wait]

Printed, not asserted. Chromium rasterizes in software here (--disable-gpu).
"""

import argparse
import io
import time

import httpx
import numpy as np
from PIL import Image
from playwright.sync_api import Page, sync_playwright

from benchmarks._server import LiveServer, live_server, signed_in_page
from benchmarks.bench_image_workspace import RECORD, STOP, screen, stats

BYTES_FETCHED = """() => performance.getEntriesByType('resource')
  .filter((e) => /\\/image(_files\\/|$)/.test(e.name))
  .reduce((sum, e) => sum + e.encodedBodySize, 0)"""
DRAWN = """() => { const t = window.imageWorkspace.picture.tiles;
  const ready = document.querySelector('#workspace').dataset.ready === 'true';
  return ready && (!t || t.loading === 0); }"""


def picture(size: int) -> bytes:
    """Smooth regions with mild noise (a PNG of a few bytes a pixel, as photographs are)."""
    rng = np.random.default_rng(0)
    y, x = np.ogrid[0:size, 0:size]
    pixels = np.empty((size, size, 3), np.uint8)
    pixels[..., 0] = (120 + 80 * np.sin(x / 190.0) + 0 * y).astype(np.uint8)
    pixels[..., 1] = (100 + 60 * np.cos(y / 170.0) + 0 * x).astype(np.uint8)
    pixels[..., 2] = ((x + y) % 256).astype(np.uint8)
    pixels[::7, ::5] = rng.integers(0, 256, size=pixels[::7, ::5].shape, dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def upload(server: LiveServer, size: int) -> int:
    project = httpx.post(
        f"{server.base}/projects", json={"name": "tiles bench"}, headers=server.headers
    ).json()
    started = time.perf_counter()
    response = httpx.post(
        f"{server.base}/projects/{project['id']}/datasets",
        files={"file": ("large.png", picture(size), "image/png")},
        headers=server.headers,
        timeout=600,
    )
    response.raise_for_status()
    print(
        f"upload of {size} x {size} to 201 (pyramid included): "
        f"{time.perf_counter() - started:.1f} s"
    )
    return int(response.json()["id"])


def wait_ready(server: LiveServer, dataset_id: int) -> None:
    started = time.perf_counter()
    while True:
        dataset = httpx.get(f"{server.base}/datasets/{dataset_id}", headers=server.headers).json()
        if dataset["status"] != "featurizing":
            break
        time.sleep(1)
    print(f"featurization: {dataset['status']} after {time.perf_counter() - started:.0f} s")


def open_and_pan(page: Page, origin: str, dataset_id: int, tiles: bool) -> dict[str, float]:
    started = time.perf_counter()
    page.goto(f"{origin}/datasets/{dataset_id}/workspace?tiles={int(tiles)}")
    page.wait_for_function(DRAWN, timeout=600_000, polling=50)
    opened = time.perf_counter() - started
    fetched = float(page.evaluate(BYTES_FETCHED))
    # 1:1, then a drag across the canvas and back (middle button: pan).
    view = "window.imageWorkspace.view"
    page.evaluate(f"() => {view}.zoomTo(2000, 2000, 2000 + 1200, 2000 + 800)")
    page.evaluate(
        f"() => {{ const b = document.querySelector('#image').getBoundingClientRect();"
        f" {view}.zoomAt({{ clientX: b.left + b.width / 2, clientY: b.top + b.height / 2 }},"
        f" 1 / {view}.view.scale); }}"
    )
    page.wait_for_function(DRAWN, timeout=600_000, polling=50)
    x, y = screen(page, 2600, 2400)
    page.evaluate(RECORD)
    page.mouse.move(x, y)
    page.mouse.down(button="middle")
    for k in range(1, 121):
        dx = 600 * (k / 60 if k <= 60 else (120 - k) / 60)
        page.mouse.move(x - dx, y - dx / 2)
    page.mouse.up(button="middle")
    page.wait_for_function(DRAWN, timeout=600_000, polling=50)
    frames, p50, p95, worst = stats(page.evaluate(STOP))
    return {
        "open_s": opened,
        "mib": fetched / 2**20,
        "frames": frames,
        "p50": p50,
        "p95": p95,
        "max": worst,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=7000)
    parser.add_argument("--no-wait", action="store_true", help="measure while featurizing")
    args = parser.parse_args()
    with live_server() as server, sync_playwright() as playwright:
        dataset_id = upload(server, args.size)
        if not args.no_wait:
            wait_ready(server, dataset_id)
        rows = []
        for tiles in (True, False, True, False):
            browser, page, origin = signed_in_page(server, playwright)
            rows.append((tiles, open_and_pan(page, origin, dataset_id, tiles)))
            browser.close()
    print(
        f"\n| {args.size} x {args.size} picture | open to drawn | picture bytes fetched |"
        " pan frames | frame p50 | p95 | max |"
    )
    print("|---|---|---|---|---|---|---|")
    for tiles, r in rows:
        name = "tiles (Deep Zoom)" if tiles else "whole picture (?tiles=0)"
        print(
            f"| {name} | {r['open_s']:.2f} s | {r['mib']:.1f} MiB | {r['frames']:.0f} |"
            f" {r['p50']:.1f} ms | {r['p95']:.1f} ms | {r['max']:.1f} ms |"
        )


if __name__ == "__main__":
    main()
