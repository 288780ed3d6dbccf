"""A run that cannot start says why in the workspace, in a real browser: on a server whose runs
go to a Dask scheduler that is not there, the progress line says the run waits for one (not a
silent "queued"); once a scheduler with a worker comes up on that address, the run starts and
the page shows it succeeded. The same line counts a run's attempts past the first."""

import io
import sqlite3

import httpx
import numpy as np
import pytest
from playwright.sync_api import Browser, expect
from sklearn.datasets import load_iris

from benchmarks._server import PASSWORD, free_port, live_server
from tests.browser.conftest import sign_in
from tests.jobs.test_dask_restarts import _cluster

pytestmark = pytest.mark.browser


def _upload(base: str, headers: dict[str, str]) -> int:
    buffer = io.BytesIO()
    np.save(buffer, load_iris().data)
    with httpx.Client(base_url=base, headers=headers, timeout=60) as api:
        project = api.post("/projects", json={"name": "waiting"}).json()["id"]
        created = api.post(
            f"/projects/{project}/datasets",
            files={"file": ("iris.npy", buffer.getvalue(), "application/octet-stream")},
        )
        assert created.status_code == 201, created.text
        return int(created.json()["id"])


def test_a_run_says_it_waits_for_a_scheduler_then_runs_once_one_is_up(browser: Browser) -> None:
    port = free_port()
    env = {
        "JOBS_EXECUTOR": "dask",
        "DASK_SCHEDULER": f"tcp://127.0.0.1:{port}",
        "DASK_RETRY_SECONDS": "0.5",
        "WARM_KERNELS_ON_START": "false",
    }
    with live_server(**env) as server:
        dataset_id = _upload(server.base, server.headers)
        origin = server.base.removesuffix("/api/v1")
        context = browser.new_context(base_url=origin, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        sign_in(page, password=PASSWORD)
        page.goto(f"/datasets/{dataset_id}/workspace")
        expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=60_000)
        page.select_option("#algorithm", "cec")
        page.fill("[data-param=n_clusters]", "3")
        page.get_by_role("button", name="Run", exact=True).click()
        progress = page.get_by_test_id("progress-text")
        expect(progress).to_contain_text(
            f"queued · waiting: no Dask scheduler answers at tcp://127.0.0.1:{port}",
            timeout=30_000,
        )
        # The line also counts a run's attempts past the first (a worker lost under it; here
        # written into the row while it waits, as a takeover would count it).
        with sqlite3.connect(server.workdir / "bench.db") as db:
            db.execute("UPDATE runs SET attempt = 2 WHERE status = 'queued'")
        expect(progress).to_contain_text(
            "attempt 2: started again after a worker was lost", timeout=30_000
        )
        with _cluster(port):
            expect(progress).to_contain_text("succeeded", timeout=300_000)
            expect(progress).not_to_contain_text("waiting")
            expect(progress).not_to_contain_text("attempt")  # its first start on a worker
        context.close()
