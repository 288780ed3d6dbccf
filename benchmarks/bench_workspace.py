"""The workspace in headless Chromium at 100,000 and 1,000,000 points: time to first render
(navigation until the plot is drawn and the page is ready) and time for a lasso selection
(a real mouse drag around half of the plot, until the selection count is shown). Then the
expert's loop with "Live" on at 100,000 x 10 (issue 38), for CEC-IB and PPC: 20 acts, each a
real lasso around a small patch of one blob labelled with the blob's class, timed from
the click on Label until the new run's colours show (targets: p50 under 1 s, p95 under 2 s),
and the shown run's ARI after the acts beside a fresh fit on the same annotations (within 0.02).

    .venv/bin/python -m benchmarks.bench_workspace [--sizes 100000 1000000] [--live-size 100000]
        [--live-methods cec-ib ppc] [--acts 20]

Printed, not asserted. Chromium renders WebGL in software here (no GPU), so the figures are an
upper bound for a desktop browser.
"""

import argparse
import io
import statistics
import time

import httpx
import numpy as np
from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from benchmarks._server import LiveServer, live_server, signed_in_page
from benchmarks.bench_loop import BLOBS, LABELED_PER_BLOB, label, run_to_end
from benchmarks.bench_loop import upload as upload_matrix


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


def lasso_around(page: Page, cx: float, cy: float, radius: float) -> None:
    """A real mouse lasso: a square of half-side ``radius`` around canvas pixel (cx, cy)."""
    box = page.locator("#plot").bounding_box()
    assert box is not None
    left, top = box["x"] + cx - radius, box["y"] + cy - radius
    right, bottom = box["x"] + cx + radius, box["y"] + cy + radius
    page.mouse.move(left, top)
    page.mouse.down()
    for x, y in [(right, top), (right, bottom), (left, bottom)]:
        page.mouse.move(x, y, steps=5)
    page.mouse.move(left, top + 1, steps=5)
    page.mouse.up()


def clear_spots(page: Page, y: np.ndarray, blob: int, radius: float) -> list[tuple[float, float]]:
    """Where an expert would lasso ``blob`` on the plot, best first: some of its items' canvas
    positions, ranked by how much of their neighbourhood (2 x ``radius``, in a sample of all
    items) is that blob, then by how many items it holds. Blobs overlap in a 2-D view of 10-D
    data, and a lasso at a blob's centre can hold two of them."""
    rng = np.random.default_rng(blob)
    sample = rng.choice(len(y), min(len(y), 20_000), replace=False)
    candidates = rng.choice(np.flatnonzero(y == blob), 300, replace=False)
    ids = np.concatenate([sample, candidates]).tolist()
    xy = np.asarray(
        page.evaluate("(ids) => ids.map((i) => window.workspace.plot.toScreen(i))", ids),
        dtype=float,
    )
    around, spots = xy[: len(sample)], xy[len(sample) :]
    keys = []
    for spot in spots:
        near = np.hypot(*(around - spot).T) <= 2 * radius
        purity = float(np.mean(y[sample[near]] == blob)) if near.any() else 0.0
        keys.append((round(purity, 2), int(near.sum())))
    order = sorted(range(len(spots)), key=lambda i: keys[i], reverse=True)
    return [(float(spots[i][0]), float(spots[i][1])) for i in order]


def lasso_blob(page: Page, y: np.ndarray, blob: int, radius: float) -> bool:
    """Lasso a patch that holds only ``blob``'s items, as an expert would (who sees the colours
    of the labels and clusters and does not label a patch that mixes two); False when none of
    the 10 best spots is one (the blob lies under another in this view)."""
    for cx, cy in clear_spots(page, y, blob, radius)[:10]:
        page.evaluate("() => window.workspace.plot.deselect()")
        page.wait_for_function("document.querySelector('#selection-count').textContent === '0'")
        lasso_around(page, cx, cy, radius)
        try:
            page.wait_for_function(
                "document.querySelector('#selection-count').textContent !== '0'", timeout=3_000
            )
        except PlaywrightTimeout:
            continue  # an empty patch
        selected = page.evaluate("() => window.workspace.state.selection")
        if np.all(y[np.asarray(selected)] == blob):
            return True
    return False


def live_loop(
    page: Page, origin: str, server: LiveServer, method: str, size: int, acts: int
) -> dict[str, float]:
    """The expert's loop in the page, as bench_loop runs it through the API: 8 blobs in 10-D,
    20 labeled items per blob and a first run before the page opens; then, with Live on and
    ``method`` chosen, each act lassoes a small patch at the centre of one blob and labels it
    with the blob's class, timed from the click on Label until the new run's colours show."""
    with httpx.Client(headers=server.headers, timeout=600) as client:
        x, y = make_blobs(n_samples=size, centers=BLOBS, n_features=10, random_state=0)
        rng = np.random.default_rng(0)
        dataset_id = upload_matrix(client, server, x, f"live {method}")
        for blob in range(BLOBS):
            items = rng.choice(np.flatnonzero(y == blob), LABELED_PER_BLOB, replace=False)
            label(client, server, dataset_id, items, f"class {blob}")
        run_to_end(client, server, dataset_id, method, {})
    page.goto(f"{origin}/datasets/{dataset_id}/workspace")
    page.wait_for_selector("#workspace[data-ready=true]", timeout=600_000)
    page.select_option("#algorithm", method)
    page.check("#live")
    page.get_by_role("button", name="Lasso").click()
    seconds: list[float] = []
    hidden: set[int] = set()  # blobs with no patch of their own in this view
    blobs = (b for turn in range(acts) for b in range(BLOBS) if b not in hidden)
    while len(seconds) < acts:
        blob = next(blobs)
        if not lasso_blob(page, y, blob, radius=4 + len(seconds) // BLOBS):
            hidden.add(blob)
            continue
        shown = page.locator("#run-select").input_value()
        page.fill("#new-category", f"class {blob}")
        started = time.perf_counter()
        page.get_by_role("button", name="Label", exact=True).click()
        page.wait_for_function(
            "([shown]) => { const s = document.querySelector('#run-select');"
            " return s.value !== shown && document.querySelector('#stale').hidden; }",
            arg=[shown],
            timeout=300_000,
        )
        seconds.append(time.perf_counter() - started)
    shown_run = int(page.locator("#run-select").input_value())
    with httpx.Client(headers=server.headers, timeout=600) as client:
        shown_labels = np.load(io.BytesIO(client.get(
            f"{server.base}/runs/{shown_run}/result", params={"format": "npy"}
        ).content))  # fmt: skip
        fresh, _ = run_to_end(client, server, dataset_id, method, {})
    loop_ari = adjusted_rand_score(y, shown_labels)
    fresh_ari = adjusted_rand_score(y, fresh)
    return {
        "p50": statistics.median(seconds),
        "p95": float(np.percentile(seconds, 95)),
        "loop_ari": loop_ari,
        "fresh_ari": fresh_ari,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--live-size", type=int, default=100_000, help="0 skips the live part")
    parser.add_argument("--live-methods", nargs="+", default=["cec-ib", "ppc"])
    parser.add_argument("--acts", type=int, default=20)
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
        live = {}
        if args.live_size:
            for method in args.live_methods:
                live[method] = live_loop(page, origin, server, method, args.live_size, args.acts)
        browser.close()
    print("workspace in headless Chromium (software WebGL)")
    print("| points | time to first render (s) | lasso selection (s) | points selected |")
    print("|---|---|---|---|")
    for n, first_render, lasso_s, selected in rows:
        print(f"| {n:,} | {first_render:.2f} | {lasso_s:.3f} | {selected:,} |")
    if live:
        print(f"\nLive at {args.live_size:,} x 10 ({BLOBS} blobs), {args.acts} acts: act -> new "
              "colours shown; ARI of the shown run after the acts beside a fresh fit")  # fmt: skip
        print("| method | p50 (s) | p95 (s) | ARI after acts | fresh fit ARI | ΔARI |")
        print("|---|---|---|---|---|---|")
        for method, r in live.items():
            print(
                f"| {method} | {r['p50']:.2f} | {r['p95']:.2f} | {r['loop_ari']:.3f} "
                f"| {r['fresh_ari']:.3f} | {r['loop_ari'] - r['fresh_ari']:+.3f} |"
            )
        print("targets: p50 < 1 s, p95 < 2 s, ARI within 0.02 of the fresh fit")


if __name__ == "__main__":
    main()
