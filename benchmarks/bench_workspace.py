"""The workspace in headless Chromium at 100,000 and 1,000,000 points: time to first render
(navigation until the plot is drawn and the page is ready) and time for a lasso selection
(a real mouse drag around half of the plot, until the selection count is shown).

    .venv/bin/python -m benchmarks.bench_workspace [--sizes 100000 1000000]

Printed, not asserted. Chromium renders WebGL in software here (no GPU), so the figures are an
upper bound for a desktop browser.
"""

import argparse
import io
import time

import httpx
import numpy as np
from playwright.sync_api import sync_playwright

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
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
            box = page.locator("#plot").bounding_box()
            assert box is not None
            left, top = box["x"] + 0.05 * box["width"], box["y"] + 0.05 * box["height"]
            right, bottom = box["x"] + 0.5 * box["width"], box["y"] + 0.95 * box["height"]
            page.mouse.move(left, top)
            page.mouse.down()
            for x, y in [(right, top), (right, bottom), (left, bottom)]:
                page.mouse.move(x, y, steps=10)
            page.mouse.move(left, top + 3, steps=10)
            started = time.perf_counter()
            page.mouse.up()
            page.wait_for_function(
                "document.querySelector('#selection-count').textContent !== '0'", timeout=120_000
            )
            lasso = time.perf_counter() - started
            selected = int(page.locator("#selection-count").inner_text())
            rows.append((n, first_render, lasso, selected))
        browser.close()
    print("workspace in headless Chromium (software WebGL)")
    print("| points | time to first render (s) | lasso selection (s) | points selected |")
    print("|---|---|---|---|")
    for n, first_render, lasso, selected in rows:
        print(f"| {n:,} | {first_render:.2f} | {lasso:.3f} | {selected:,} |")


if __name__ == "__main__":
    main()
