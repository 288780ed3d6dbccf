"""Painting in the image workspace, headless Chromium, on a 1024 x 1024 image: frame times
(requestAnimationFrame deltas) during a scripted mouse drag, against an idle page (the frame
rate's floor) and against redrawing the whole image on every pointer event (what the
workspace avoids by redrawing only what a brush segment touched), also with the CPU slowed
down by DevTools' throttling. Then the time from the end of a stroke to its annotation being
stored, and from Ctrl+Enter to the result's overlay on the page (no reload).

    .venv/bin/python -m benchmarks.bench_image_workspace [--moves 600] [--radius 12]
        [--throttle 1 4]

Printed, not asserted. Chromium rasterizes in software here (--disable-gpu), so the figures
are an upper bound for a desktop browser.
"""

import argparse
import io
import re
import time

import httpx
import numpy as np
from PIL import Image
from playwright.sync_api import Page, expect, sync_playwright

from benchmarks._server import LiveServer, live_server, signed_in_page

SIZE = 1024
LEFT = (40.0, 60.0, 440.0, 960.0)  # label 1 paints here
RIGHT = (600.0, 60.0, 980.0, 960.0)  # label 2 here

RECORD = """() => {
  window.benchFrames = [];
  window.benchRecording = true;
  let last = null;
  const tick = (t) => {
    if (last !== null) window.benchFrames.push(t - last);
    last = t;
    if (window.benchRecording) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
STOP = "() => { window.benchRecording = false; return window.benchFrames; }"
# The peer: a full redraw of every layer at each pointer event, as a naive canvas app does.
FULL_REDRAW_ON = """() => {
  const view = window.imageWorkspace.view;
  window.benchFullRedraw = () => view.invalidate();
  document.querySelector('#image').addEventListener('pointermove', window.benchFullRedraw);
}"""
FULL_REDRAW_OFF = """() => {
  document.querySelector('#image').removeEventListener('pointermove', window.benchFullRedraw);
}"""


def picture() -> bytes:
    """A 1024 x 1024 picture with regions and texture (PNG)."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    pixels = np.zeros((SIZE, SIZE, 3), np.float64)
    pixels[..., 0] = 120 + 80 * np.sin(x / 90.0)
    pixels[..., 1] = 100 + 60 * np.cos(y / 70.0)
    disc = (x - 512) ** 2 + (y - 480) ** 2 < 260**2
    pixels[disc] = (210, 190, 80)
    pixels += rng.normal(0, 12, pixels.shape)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def upload(server: LiveServer) -> int:
    project = httpx.post(
        f"{server.base}/projects", json={"name": "image bench"}, headers=server.headers
    ).json()
    response = httpx.post(
        f"{server.base}/projects/{project['id']}/datasets",
        files={"file": ("bench.png", picture(), "image/png")},
        headers=server.headers,
        timeout=120,
    )
    response.raise_for_status()
    dataset_id = int(response.json()["id"])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        dataset = httpx.get(f"{server.base}/datasets/{dataset_id}", headers=server.headers).json()
        if dataset["status"] == "ready":
            return dataset_id
        if dataset["status"] == "failed":
            raise RuntimeError(f"featurization failed: {dataset['featurization']['error']}")
        time.sleep(0.5)
    raise RuntimeError("featurization did not finish")


def screen(page: Page, x: float, y: float) -> tuple[float, float]:
    at = page.evaluate(
        "([x, y]) => { const b = document.querySelector('#image').getBoundingClientRect();"
        " const s = window.imageWorkspace.view.toScreen(x, y);"
        " return [b.left + s.x, b.top + s.y]; }",
        [x, y],
    )
    return float(at[0]), float(at[1])


def drag(page: Page, moves: int, area: tuple[float, float, float, float]) -> None:
    """One stroke of `moves` mouse moves: a zig-zag over `area` (x0, y0, x1, y1 in image
    pixels). Each label paints its own area: scribbles of two labels on the same items are a
    conflict that stops a run."""
    x0, y0, x1, y1 = area
    rows = 6
    points = []
    for k in range(moves + 1):
        t = k / moves * rows
        row = min(int(t), rows - 1)
        along = t - row if row % 2 == 0 else 1 - (t - row)
        points.append((x0 + along * (x1 - x0), y0 + (row + (t - row)) / rows * (y1 - y0)))
    page.mouse.move(*screen(page, *points[0]))
    page.mouse.down()
    for point in points[1:]:
        page.mouse.move(*screen(page, *point))
    page.mouse.up()


def stats(deltas: list[float]) -> tuple[int, float, float, float]:
    values = np.asarray(deltas[1:] or [0.0])
    return (
        len(values),
        float(np.percentile(values, 50)),
        float(np.percentile(values, 95)),
        float(values.max()),
    )


def measure(
    page: Page, moves: int, area: tuple[float, float, float, float]
) -> tuple[tuple[int, float, float, float], float]:
    page.evaluate(RECORD)
    started = time.perf_counter()
    drag(page, moves, area)
    seconds = time.perf_counter() - started
    return stats(page.evaluate(STOP)), seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--moves", type=int, default=600, help="mouse moves per stroke")
    parser.add_argument("--radius", type=int, default=12, help="brush radius (image pixels)")
    parser.add_argument(
        "--throttle", type=float, nargs="+", default=[1, 4], help="CPU slowdown factors"
    )
    args = parser.parse_args()
    rows = []
    with live_server() as server, sync_playwright() as playwright:
        dataset_id = upload(server)
        browser, page, origin = signed_in_page(server, playwright)
        page.goto(f"{origin}/datasets/{dataset_id}/workspace")
        expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=60_000)
        page.fill("#radius", str(args.radius))
        canvas = page.get_by_test_id("image-canvas")
        zoom = float(canvas.get_attribute("data-zoom") or 0)

        page.evaluate(RECORD)
        time.sleep(2)
        rows.append(("idle page, no input", 1, stats(page.evaluate(STOP)), 2.0))
        # Warm-up stroke (JIT, first rasterization), not counted.
        drag(page, 60, LEFT)
        row, seconds = measure(page, args.moves, LEFT)
        rows.append((f"painting, whole image in view (zoom {zoom:.2f})", 1, row, seconds))
        page.keyboard.press("2")
        row, seconds = measure(page, args.moves, RIGHT)
        rows.append(("painting, second label", 1, row, seconds))

        # Saving: the last stroke is stored as one annotation.
        expect(canvas).to_have_attribute("data-pending", "0", timeout=60_000)
        strokes = int(canvas.get_attribute("data-strokes") or 0)
        drag(page, 40, RIGHT)
        started = time.perf_counter()
        expect(canvas).to_have_attribute("data-strokes", str(strokes + 1), timeout=60_000)
        expect(canvas).to_have_attribute("data-pending", "0", timeout=60_000)
        saved = time.perf_counter() - started

        # A run: Ctrl+Enter until the overlay is on the page, without a reload.
        page.evaluate("() => { window.notReloaded = true; }")
        started = time.perf_counter()
        page.keyboard.press("Control+Enter")
        expect(canvas).to_have_attribute("data-run", re.compile(r"^\d+$"), timeout=600_000)
        expect(canvas).to_have_attribute("data-overlay", "on")
        overlay = time.perf_counter() - started
        assert page.evaluate("() => window.notReloaded === true"), "the page was reloaded"

        # With the overlay shown, at full speed and with the CPU slowed down (DevTools'
        # throttling, as on a slower machine), beside the full-redraw peer.
        cdp = page.context.new_cdp_session(page)
        for rate in args.throttle:
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
            row, seconds = measure(page, args.moves, RIGHT)
            rows.append(("painting over the result overlay", rate, row, seconds))
            page.mouse.move(*screen(page, 790, 512))
            page.mouse.wheel(0, -730)  # exp(730 * 0.0015) = 3, around image point (790, 512)
            row, seconds = measure(page, args.moves, (680.0, 400.0, 900.0, 620.0))
            zoomed = float(canvas.get_attribute("data-zoom") or 0)
            rows.append((f"painting, zoomed in (zoom {zoomed:.2f})", rate, row, seconds))
            page.keyboard.press("f")
            page.evaluate(FULL_REDRAW_ON)
            row, seconds = measure(page, args.moves, RIGHT)
            page.evaluate(FULL_REDRAW_OFF)
            rows.append(("peer: full redraw on every pointer event", rate, row, seconds))
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        browser.close()

    print(f"image workspace, {SIZE} x {SIZE} image, headless Chromium (software raster)")
    print(f"brush radius {args.radius} px, {args.moves} mouse moves per stroke")
    print("| case | CPU slowdown | frames | p50 (ms) | p95 (ms) | max (ms) | moves/s |")
    print("|---|---|---|---|---|---|---|")
    for name, rate, (n, p50, p95, top), seconds in rows:
        speed = f"{args.moves / seconds:.0f}" if "idle" not in name else "-"
        print(f"| {name} | {rate}x | {n} | {p50:.1f} | {p95:.1f} | {top:.1f} | {speed} |")
    print(f"stroke end (mouse up) -> annotation stored: {saved:.3f} s")
    print(f"Ctrl+Enter -> overlay of the new result shown (no reload): {overlay:.2f} s")


if __name__ == "__main__":
    main()
