"""The workspace following a run while the server restarts, in a real browser: the stream's
`shutdown` event is said on the page, and once the server is back the page follows the run
again and shows what became of it (interrupted by the shutdown), without a reload. On a server
of this module's own, stopped by SIGTERM and started again on the same port and data."""

import io
import re
import signal

import httpx
import numpy as np
import pytest
from playwright.sync_api import Browser, expect
from sklearn.datasets import make_blobs

from benchmarks._server import PASSWORD, live_server, restarted_server

pytestmark = pytest.mark.browser


def _upload(base: str, headers: dict[str, str]) -> int:
    x, _ = make_blobs(n_samples=100_000, centers=30, n_features=8, random_state=0)
    buffer = io.BytesIO()
    np.save(buffer, x.astype(np.float32))
    with httpx.Client(base_url=base, headers=headers, timeout=60) as api:
        project = api.post("/projects", json={"name": "restart"}).json()["id"]
        created = api.post(
            f"/projects/{project}/datasets",
            files={"file": ("x.npy", buffer.getvalue(), "application/octet-stream")},
        )
        assert created.status_code == 201, created.text
        return int(created.json()["id"])


def test_the_page_follows_a_run_again_after_a_restart(browser: Browser) -> None:
    env = {"WARM_KERNELS_ON_START": "false", "INLINE_WORKERS": "1"}
    with live_server(**env) as first:
        dataset_id = _upload(first.base, first.headers)
        origin = first.base.removesuffix("/api/v1")
        context = browser.new_context(base_url=origin, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto("/login")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"/datasets/{dataset_id}/workspace")
        expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=60_000)
        page.select_option("#algorithm", "cec")
        page.fill("[data-param=n_clusters]", "30")
        page.fill("[data-param=n_init]", "50")
        page.get_by_role("button", name="Run", exact=True).click()
        progress = page.get_by_test_id("progress")
        expect(progress).to_have_attribute("data-status", "running", timeout=60_000)

        first.process.send_signal(signal.SIGTERM)
        first.process.wait(timeout=30)
        expect(page.locator("#status")).to_contain_text("The server is restarting")

    with restarted_server(first, **env):
        expect(page.locator("#status")).to_contain_text("following run", timeout=30_000)
        expect(progress).to_have_attribute("data-status", "failed", timeout=30_000)
        expect(page.locator("#progress-text")).to_contain_text(re.compile("interrupted|shut down"))
    context.close()
