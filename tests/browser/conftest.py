"""A live server (the real `python -m app serve`, on a throwaway SQLite database with the demo
data) and Debian's Chromium driven by Playwright. Pages must log no console errors."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Locator,
    Page,
    expect,
    sync_playwright,
)

from benchmarks._server import CHROMIUM_ARGS, free_port, start_server, wait_until_serving

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ADMIN_PASSWORD = "browser-admin-pass"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def live_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live server's data directory: its database and, under arrays/, its array store."""
    return tmp_path_factory.mktemp("live")


@contextmanager
def serving(data_dir: Path, log_dir: Path, **settings: str) -> Iterator[str]:
    """The real server on a throwaway SQLite database in ``data_dir`` (demo data loaded), with
    ``settings`` as environment variables; its address."""
    port = free_port()
    db = data_dir / "live.db"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "DATA_DIR": str(db.parent),
        "ARRAY_STORE": str(db.parent / "arrays"),  # its own, not the other tests' store
        "ADMIN_PASSWORD": ADMIN_PASSWORD,
        "LOAD_DEMO_DATA": "true",
        **settings,
    }
    log = log_dir / "server.log"
    server = start_server(port, env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(f"{url}/api/v1", server, log=log)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="session")
def live_server(live_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(live_dir, tmp_path_factory.mktemp("live")) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (scripts/ensure-chromium.sh)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, live_server: str) -> Iterator[Page]:
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    tab.on("console", on_console)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert errors == [], f"JavaScript console errors: {errors}"


@pytest.fixture(scope="module")
def api(live_server: str) -> Iterator[httpx.Client]:
    """The live server's REST API, signed in as the admin."""
    token = httpx.post(
        f"{live_server}/api/v1/auth/token",
        data={"username": "admin", "password": ADMIN_PASSWORD},
    ).json()["access_token"]
    with httpx.Client(
        base_url=f"{live_server}/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ) as client:
        yield client


def upload_table(live_server: str, name: str, rows: list[list[float]]) -> int:
    """A dataset of a test module's own (the live server and its demo data are shared); rows of
    two features a, b."""
    csv = "a,b\n" + "\n".join(f"{u:.6f},{v:.6f}" for u, v in rows)
    with httpx.Client(base_url=f"{live_server}/api/v1", timeout=30) as api:
        token = api.post("/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD})
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        projects = api.get("/projects", headers=headers).json()["items"]
        created = api.post(
            f"/projects/{projects[0]['id']}/datasets",
            files={"file": (f"{name}.csv", csv.encode(), "text/csv")},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        return int(created.json()["id"])


def open_dataset_workspace(page: Page, dataset_id: int) -> None:
    sign_in(page)
    page.goto(f"/datasets/{dataset_id}/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)


def lasso(page: Page, x0: float, x1: float) -> None:
    """Drag a lasso around the vertical band x0..x1 (fractions of the plot's width)."""
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    left, right = box["x"] + x0 * box["width"], box["x"] + x1 * box["width"]
    top, bottom = box["y"] + 0.02 * box["height"], box["y"] + 0.98 * box["height"]
    page.mouse.move(left, top)
    page.mouse.down()
    for x, y in [(right, top), (right, bottom), (left, bottom), (left, top + 5)]:
        page.mouse.move(x, y, steps=12)
    page.mouse.up()


def selected(page: Page) -> int:
    return int(page.get_by_test_id("selection-count").inner_text())


def expect_strokes_stored(canvas: Locator, strokes: int) -> None:
    """The canvas shows `strokes` strokes, none of them still on its way to the server."""
    expect(canvas).to_have_attribute("data-strokes", str(strokes))
    expect(canvas).to_have_attribute("data-pending", "0")


def run_until_overlaid(page: Page, canvas: Locator) -> None:
    """Ctrl+Enter runs; the run succeeds and its overlay is drawn."""
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    expect(canvas).to_have_attribute("data-overlay", "on", timeout=30_000)


def sign_in(page: Page, username: str = "admin", password: str = ADMIN_PASSWORD) -> None:
    page.goto("/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
