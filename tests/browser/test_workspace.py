"""The dataset workspace in a real browser: select, label, link, draw, run, undo."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import lasso, screenshot, selected, sign_in

pytestmark = pytest.mark.browser


def open_workspace(page: Page, dataset: str) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name=dataset, exact=True).click()
    page.get_by_role("link", name="Open workspace").click()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)


def test_annotate_run_and_undo_in_the_workspace(page: Page, live_server: str) -> None:
    open_workspace(page, "iris")
    expect(page.get_by_test_id("plot")).to_have_attribute("data-rendered", "150")
    annotations = page.get_by_test_id("annotations").locator("li")
    before = annotations.count()

    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.0, 0.35)
    expect(page.get_by_test_id("selection-count")).not_to_have_text("0")
    first_region = selected(page)
    page.fill("#new-category", "small petals")
    page.get_by_role("button", name="Label", exact=True).click()
    expect(annotations).to_have_count(before + 1)
    expect(annotations.first).to_contain_text(f"label “small petals”: {first_region} item(s)")
    expect(page.locator("#categories .chip")).to_contain_text(["1 small petals"])

    lasso(page, 0.45, 0.6)
    assert selected(page) >= 2
    page.get_by_role("button", name="Must-link selection").click()
    expect(annotations).to_have_count(before + 2)
    lasso(page, 0.62, 0.78)
    page.get_by_role("button", name=re.compile("Set selection as A")).click()
    lasso(page, 0.8, 1.0)
    page.get_by_role("button", name="Cannot-link A ↔ selection").click()
    expect(annotations).to_have_count(before + 3)
    expect(page.locator("#overlay line.link.must").first).to_be_attached()
    expect(page.locator("#overlay line.link.cannot").first).to_be_attached()

    page.get_by_role("button", name="Draw boundary").click()
    overlay = page.get_by_test_id("overlay").bounding_box()
    assert overlay is not None
    for fx, fy in [(0.4, 0.05), (0.42, 0.5), (0.4, 0.95)]:
        page.mouse.click(
            overlay["x"] + fx * overlay["width"], overlay["y"] + fy * overlay["height"]
        )
    page.keyboard.press("Enter")
    expect(annotations).to_have_count(before + 4)
    expect(annotations.first).to_contain_text("boundary “left” | “right”")
    expect(page.locator("#overlay polyline.boundary")).to_have_count(1)

    page.select_option("#algorithm", "cec-ib")
    page.fill("[data-param=n_init]", "2")
    page.fill("[data-param=n_clusters]", "6")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    expect(page.locator("#progress-bar")).to_have_attribute("style", re.compile("width: 100%"))
    expect(page.get_by_test_id("plot")).to_have_attribute("data-color-by", "clusters")
    expect(page.get_by_test_id("clusters").locator("tbody tr").first).to_be_visible()
    expect(page.get_by_test_id("run-metrics")).to_contain_text("ARI")
    expect(page.get_by_test_id("stale")).to_be_hidden()
    # The result panel fits its column: no horizontal scrollbar, no table past its border.
    assert page.evaluate(
        "() => { const p = document.querySelector('.panel.runs');"
        " return p.scrollWidth <= p.clientWidth; }"
    )

    page.locator("body").click(position={"x": 5, "y": 5})  # keyboard focus off the inputs
    page.keyboard.press("Control+z")
    expect(annotations).to_have_count(before + 3)
    expect(page.get_by_test_id("stale")).to_be_visible()
    listed = page.request.get(
        f"{live_server}/api/v1/datasets/1/annotations?include_deleted=true"
    ).json()
    newest = max(listed["items"], key=lambda a: a["id"])
    assert newest["kind"] == "boundary" and newest["deleted_at"] is not None
    live = page.request.get(f"{live_server}/api/v1/datasets/1/annotations").json()
    assert live["total"] == listed["total"] - 1
    path = screenshot(page, "workspace")
    assert path.stat().st_size > 10_000


def test_conflicts_are_highlighted_and_a_run_on_them_is_refused(page: Page) -> None:
    open_workspace(page, "wine")  # a dataset of its own: the live server is shared
    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.0, 0.2)
    page.fill("#new-category", "A")
    page.get_by_role("button", name="Label", exact=True).click()
    page.fill("#new-category", "B")
    page.get_by_role("button", name="Label", exact=True).click()
    expect(page.get_by_test_id("conflicts").locator("li")).to_have_count(1)
    expect(page.get_by_test_id("conflicts")).to_contain_text("two different labels")
    expect(page.locator("#annotations li.conflict")).to_have_count(2)
    page.select_option("#algorithm", "cec-ib")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("status")).to_contain_text("contradict")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+z")
    expect(page.get_by_test_id("conflicts").locator("li")).to_have_count(0)
    # One label category is no two groups told apart: the empty cluster count is a guess,
    # and the result says so.
    run_and_wait(page, "smic")
    expect(page.get_by_test_id("run-metrics")).to_contain_text(re.compile(r"chosen t = \d+"))
    expect(page.get_by_test_id("run-metrics")).to_contain_text("LSMI")
    expect(page.get_by_test_id("run-warnings")).to_contain_text(
        "n_clusters was left empty and no two groups are told apart yet, so 3 were fitted"
    )


def run_and_wait(page: Page, algorithm: str, **params: str) -> None:
    page.select_option("#algorithm", algorithm)
    for name, value in params.items():
        field = page.locator(f"[data-param={name}]")
        if field.evaluate("el => el.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress-text")).to_contain_text("succeeded", timeout=120_000)


def test_hover_compare_two_runs_and_export(page: Page) -> None:
    open_workspace(page, "digits")
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    x, y = page.evaluate("() => window.workspace.plot.toScreen(0)")
    page.mouse.move(box["x"] + x, box["y"] + y)
    expect(page.locator("#tooltip")).to_be_visible()
    expect(page.locator("#tooltip")).to_contain_text("truth:")

    run_and_wait(page, "cec", n_clusters="10", n_init="1", covariance="spherical")
    expect(page.get_by_test_id("run-metrics")).to_contain_text("energy")
    # CEC dropped a cluster on the way: the result says how many and why (issue 36), and
    # nothing else is wrong.
    expect(page.get_by_test_id("run-warnings")).to_contain_text("of the 10 clusters asked for")
    expect(page.get_by_test_id("run-warnings").locator("li")).to_have_count(1)
    # One sweep cannot converge: the engine's warning is shown with the result.
    run_and_wait(page, "cec", n_clusters="5", n_init="1", covariance="spherical", max_iter="1")
    expect(page.get_by_test_id("run-metrics")).to_contain_text("1 sweeps (not converged)")
    expect(page.get_by_test_id("run-warnings")).to_be_visible()
    expect(page.get_by_test_id("run-warnings")).to_contain_text("did not converge")
    runs = page.locator("#compare-a option:not([value=''])")
    expect(runs).to_have_count(2)
    values = runs.evaluate_all("options => options.map(o => o.value)")
    page.select_option("#compare-a", values[0])
    page.select_option("#compare-b", values[1])
    page.get_by_role("button", name="Compare").click()
    ari = float(page.get_by_test_id("compare-ari").inner_text())
    assert -1.0 <= ari < 1.0
    expect(page.locator("#comparison table tbody tr")).not_to_have_count(0)

    with page.expect_download() as download:
        page.get_by_role("button", name="Labels & clusters (CSV)").click()
    lines = download.value.path().read_text().splitlines()
    assert lines[0] == "item,id,label,cluster"  # the id column, as the run's own CSV has it
    assert len(lines) == 1 + 1797
    assert lines[1].startswith("0,0,,") and lines[1].split(",")[3].isdigit()
    with page.expect_download() as download:
        page.get_by_role("button", name="Annotations (JSON)").click()
    assert download.value.path().read_text().strip() == "[]"


def screen_of(page: Page, item: int) -> tuple[float, float]:
    x, y = page.evaluate(f"() => window.workspace.plot.toScreen({item})")
    return float(x), float(y)


def selection_fill(page: Page) -> float:
    """How much of the plot the selected items' bounding box spans (the larger of x and y)."""
    return float(
        page.evaluate(
            """() => {
              const { plot, state } = window.workspace;
              const pts = state.selection.map((i) => plot.toScreen(i));
              const xs = pts.map((p) => p[0]);
              const ys = pts.map((p) => p[1]);
              const box = plot.canvas.getBoundingClientRect();
              return Math.max(
                (Math.max(...xs) - Math.min(...xs)) / box.width,
                (Math.max(...ys) - Math.min(...ys)) / box.height,
              );
            }"""
        )
    )


def lasso_around(page: Page, x: float, y: float, half: float) -> None:
    """Lasso the square of side 2 * half CSS pixels centred on plot position (x, y)."""
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    left, top = box["x"] + x - half, box["y"] + y - half
    page.mouse.move(left, top)
    page.mouse.down()
    for px, py in [
        (left + 2 * half, top),
        (left + 2 * half, top + 2 * half),
        (left, top + 2 * half),
    ]:
        page.mouse.move(px, py, steps=3)  # the lasso ignores moves shorter than ~8 px
    page.mouse.move(left, top + 10, steps=3)
    page.mouse.up()


def test_pan_then_fit_all_and_zoom_to_selection(page: Page) -> None:
    open_workspace(page, "iris")
    home = screen_of(page, 0)
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 150, cy + 60, steps=10)
    page.mouse.up()
    panned = screen_of(page, 0)
    assert abs(panned[0] - home[0]) > 50, (home, panned)

    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("f")
    page.wait_for_function(
        "([x, y]) => { const [a, b] = window.workspace.plot.toScreen(0);"
        " return Math.abs(a - x) < 1 && Math.abs(b - y) < 1; }",
        arg=list(home),
    )

    page.get_by_role("button", name="Lasso").click()
    central = int(
        page.evaluate(
            """() => {
              const { plot } = window.workspace;
              const box = plot.canvas.getBoundingClientRect();
              let best = 0;
              let bestDistance = Infinity;
              for (let i = 0; i < plot.size; i += 1) {
                const [x, y] = plot.toScreen(i);
                const d = Math.hypot(x - box.width / 2, y - box.height / 2);
                if (d < bestDistance) [best, bestDistance] = [i, d];
              }
              return best;
            }"""
        )
    )
    lasso_around(page, *screen_of(page, central), 30)
    expect(page.get_by_test_id("selection-count")).not_to_have_text("0")
    assert selected(page) >= 2
    before = selection_fill(page)
    assert before < 0.2
    page.get_by_role("button", name="Zoom to selection").click()
    # zoomToPoints pads the box by 30%: the selection then spans about 1 / 1.3 of the plot.
    page.wait_for_function(
        "() => { const { plot, state } = window.workspace;"
        " const pts = state.selection.map((i) => plot.toScreen(i));"
        " const box = plot.canvas.getBoundingClientRect();"
        " const w = Math.max(...pts.map((p) => p[0])) - Math.min(...pts.map((p) => p[0]));"
        " const h = Math.max(...pts.map((p) => p[1])) - Math.min(...pts.map((p) => p[1]));"
        " return Math.max(w / box.width, h / box.height) > 0.5; }"
    )
    assert selection_fill(page) <= 1.0  # framed, not overshot
    page.get_by_role("button", name="Fit all").click()
    page.wait_for_function(
        "([x, y]) => { const [a, b] = window.workspace.plot.toScreen(0);"
        " return Math.abs(a - x) < 1 && Math.abs(b - y) < 1; }",
        arg=list(home),
    )


def test_a_viewer_gets_a_read_only_workspace(page: Page, live_server: str) -> None:
    """Viewers see the plot, runs and results, but no editing tools, and the page still works."""
    import httpx

    from tests.browser.conftest import ADMIN_PASSWORD

    token = httpx.post(
        f"{live_server}/api/v1/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD}
    ).json()["access_token"]
    admin = {"Authorization": f"Bearer {token}"}
    projects = httpx.get(f"{live_server}/api/v1/projects", headers=admin).json()["items"]
    demo = next(p for p in projects if p["name"] == "Demo")
    created = httpx.post(
        f"{live_server}/api/v1/users",
        json={"username": "read-only-reader", "password": "reader-password-1"},
        headers=admin,
    )
    assert created.status_code in (201, 409), created.text
    member = httpx.put(
        f"{live_server}/api/v1/projects/{demo['id']}/members",
        json={"username": "read-only-reader", "role": "viewer"},
        headers=admin,
    )
    assert member.status_code in (200, 201), member.text

    sign_in(page, "read-only-reader", "reader-password-1")
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="iris", exact=True).click()
    page.get_by_role("link", name="Open workspace").click()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-rendered", "150")
    expect(page.locator("#label-selection")).to_have_count(0)
    expect(page.locator("#run")).to_have_count(0)
    page.keyboard.press("f")  # shortcuts that only read still work
    expect(page.locator("#status")).not_to_have_attribute("data-kind", "error")
