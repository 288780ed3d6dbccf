"""Draw docs/images/workspace.png (the README's picture) from the running app, not by hand.

    .venv/bin/python scripts/docs_screenshot.py

Starts `python -m app serve` with the demo, labels a few iris flowers of each species and
must-links two versicolor pairs over the API, runs PPC, and photographs the workspace in
Debian's Chromium with the run's clusters shown.
"""

import sys
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).parents[1]))

from benchmarks._server import live_server, signed_in_page

OUT = Path(__file__).parents[1] / "docs" / "images" / "workspace.png"
TERMINAL = {"succeeded", "failed", "cancelled"}


def main() -> None:
    with live_server(LOAD_DEMO_DATA="true", WARM_KERNELS_ON_START="false") as server:
        api = httpx.Client(base_url=server.base, headers=server.headers, timeout=120)
        project = api.get("/projects").json()["items"][0]["id"]
        datasets = api.get(f"/projects/{project}/datasets").json()["items"]
        iris = next(d["id"] for d in datasets if d["name"] == "iris")
        labels = (([0, 10, 20], "setosa"), ([50, 60], "versicolor"), ([100], "virginica"))
        for items, label in labels:
            body = {"kind": "label", "items": items, "label": label}
            api.post(f"/datasets/{iris}/annotations", json=body).raise_for_status()
        for pair in ([70, 80], [90, 95]):
            body = {"kind": "must_link", "items": pair}
            api.post(f"/datasets/{iris}/annotations", json=body).raise_for_status()
        run = api.post("/runs", json={"dataset_id": iris, "algorithm": "ppc", "params": {}}).json()
        while api.get(f"/runs/{run['id']}").json()["status"] not in TERMINAL:
            time.sleep(0.2)
        with sync_playwright() as playwright:
            browser, page, origin = signed_in_page(server, playwright)
            page.set_viewport_size({"width": 1400, "height": 820})
            page.goto(f"{origin}/datasets/{iris}/workspace")
            page.wait_for_selector("#workspace[data-ready=true]", timeout=60_000)
            page.select_option("#run-select", str(run["id"]))
            page.select_option("#color-by", "clusters")
            time.sleep(1.5)  # the plot's transition to the run's colours
            OUT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT))
            browser.close()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
