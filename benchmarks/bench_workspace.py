"""The workspace in headless Chromium at 100,000 and 1,000,000 points: time to first render
(navigation until the plot is drawn and the page is ready) and time for a lasso selection
(a real mouse drag around half of the plot, until the selection count is shown). Then "Live"
at 10,000 points: with the switch on and the page's default method, the time from labelling a
lasso selection (the click on Label) until the new run's result is shown, three times.

    .venv/bin/python -m benchmarks.bench_workspace [--sizes 100000 1000000] [--live-size 10000]

Printed, not asserted. Chromium renders WebGL in software here (no GPU), so the figures are an
upper bound for a desktop browser.
"""

import argparse
import io
import time

import httpx
import numpy as np
from playwright.sync_api import Page, sync_playwright

from benchmarks._server import live_server, signed_in_page


def upload(base: str, headers: dict[str, str], n: int) -> int:
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=6, size=(12, 4))
    x = centers[rng.integers(0, 12, n)] + rng.normal(size=(n, 4))
    buffer = io.BytesIO()
    np.save(buffer, x.astype(np.float32))
    project = httpx.post(f"{base}/projects", json={"name": f"n={n}"}, headers=headers).json()
    response = httpx.post(
        f"{base}/projects/{project['id']}/datasets",
        files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
        headers=headers,
        timeout=600,
    )
    response.raise_for_status()
    return int(response.json()["id"])


def lasso(page: Page, x0: float, x1: float) -> None:
    """A real mouse drag around the plot's band [x0, x1] (fractions of its width), not yet
    released: the caller releases the button (and may time from there)."""
    box = page.locator("#plot").bounding_box()
    assert box is not None
    left, top = box["x"] + x0 * box["width"], box["y"] + 0.05 * box["height"]
    right, bottom = box["x"] + x1 * box["width"], box["y"] + 0.95 * box["height"]
    page.mouse.move(left, top)
    page.mouse.down()
    for x, y in [(right, top), (right, bottom), (left, bottom)]:
        page.mouse.move(x, y, steps=10)
    page.mouse.move(left, top + 3, steps=10)


def live_rerun_seconds(page: Page, origin: str, dataset_id: int, acts: int = 3) -> list[float]:
    """Seconds from each labelling act to the shown result of the run it started."""
    page.goto(f"{origin}/datasets/{dataset_id}/workspace")
    page.wait_for_selector("#workspace[data-ready=true]", timeout=600_000)
    page.check("#live")
    page.get_by_role("button", name="Lasso").click()
    seconds = []
    for act in range(acts):
        lasso(page, 0.05 + 0.3 * act, 0.3 + 0.3 * act)
        page.mouse.up()
        page.wait_for_function("document.querySelector('#selection-count').textContent !== '0'")
        shown = page.locator("#run-select").input_value()
        page.fill("#new-category", f"live-{act}")
        started = time.perf_counter()
        page.get_by_role("button", name="Label", exact=True).click()
        page.wait_for_function(
            "([shown]) => { const s = document.querySelector('#run-select');"
            " return s.value !== shown && document.querySelector('#stale').hidden; }",
            arg=[shown],
            timeout=120_000,
        )
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--live-size", type=int, default=10_000, help="0 skips the live part")
    args = parser.parse_args()
    rows = []
    with live_server() as server, sync_playwright() as playwright:
        browser, page, origin = signed_in_page(server, playwright)
        for n in args.sizes:
            dataset_id = upload(server.base, server.headers, n)
            started = time.perf_counter()
            page.goto(f"{origin}/datasets/{dataset_id}/workspace")
            page.wait_for_selector("#workspace[data-ready=true]", timeout=600_000)
            first_render = time.perf_counter() - started

            page.get_by_role("button", name="Lasso").click()
            lasso(page, 0.05, 0.5)
            started = time.perf_counter()
            page.mouse.up()
            page.wait_for_function(
                "document.querySelector('#selection-count').textContent !== '0'", timeout=120_000
            )
            lasso_s = time.perf_counter() - started
            selected = int(page.locator("#selection-count").inner_text())
            rows.append((n, first_render, lasso_s, selected))
        live = []
        if args.live_size:
            dataset_id = upload(server.base, server.headers, args.live_size)
            live = live_rerun_seconds(page, origin, dataset_id)
        browser.close()
    print("workspace in headless Chromium (software WebGL)")
    print("| points | time to first render (s) | lasso selection (s) | points selected |")
    print("|---|---|---|---|")
    for n, first_render, lasso_s, selected in rows:
        print(f"| {n:,} | {first_render:.2f} | {lasso_s:.3f} | {selected:,} |")
    if live:
        times = ", ".join(f"{t:.2f}" for t in live)
        print(f"live at {args.live_size:,} points: act -> result shown in {times} s")


if __name__ == "__main__":
    main()
