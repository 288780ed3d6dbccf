"""What a newcomer tripped over in the workspace, in a real browser: undone boundaries vanish at
once, a cannot-link between sets is one line with its count, layers can be hidden, one
annotation can be edited or deleted, the newest run is shown after a reload with an honest
progress line, "?" lists the shortcuts, a cluster becomes a label in one act, "Live"
re-runs after each annotation (continuing the last PPC run), and a re-run keeps each group's
colour."""

import re
from collections.abc import Callable

import numpy as np
import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import lasso, open_dataset_workspace, sign_in, upload_table

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dataset_id(live_server: str) -> int:
    # Two clear groups along x, so lassos over the left and right of the plot select them.
    rng = np.random.default_rng(5)
    left = rng.normal([-6.0, 0.0], 1.0, size=(60, 2))
    right = rng.normal([6.0, 0.0], 1.0, size=(60, 2))
    return upload_table(live_server, "editing-blobs", np.vstack([left, right]).tolist())


def run_method(page: Page) -> None:
    page.select_option("#algorithm", "cec")
    page.fill("[data-param=n_clusters]", "2")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )


def off_inputs(page: Page) -> None:
    page.locator("body").click(position={"x": 5, "y": 5})


def test_links_boundaries_layers_and_single_annotation_edits(page: Page, dataset_id: int) -> None:
    open_dataset_workspace(page, dataset_id)
    annotations = page.get_by_test_id("annotations").locator("li")
    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.0, 0.3)
    page.get_by_role("button", name=re.compile("Set selection as A")).click()
    lasso(page, 0.7, 1.0)
    page.get_by_role("button", name="Cannot-link A ↔ selection").click()
    expect(annotations).to_have_count(1)
    # One line between the two sets' centres, with its count, not every pair.
    expect(page.locator("#overlay line.link.cannot")).to_have_count(1)
    expect(page.locator("#overlay text.link-count")).to_have_text(re.compile(r"^\d+\u00d7\d+$"))

    page.get_by_role("button", name="Draw boundary").click()
    box = page.get_by_test_id("overlay").bounding_box()
    assert box is not None
    for fx, fy in [(0.5, 0.05), (0.52, 0.95)]:
        page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    page.keyboard.press("Enter")
    expect(page.locator("#overlay polyline.boundary")).to_have_count(1)
    off_inputs(page)
    page.keyboard.press("Control+z")  # the undone boundary disappears without a reload
    expect(annotations).to_have_count(1)
    expect(page.locator("#overlay polyline.boundary")).to_have_count(0)
    page.keyboard.press("Control+Shift+z")
    expect(page.locator("#overlay polyline.boundary")).to_have_count(1)

    page.uncheck("#show-links")
    expect(page.locator("#overlay line.link")).to_have_count(0)
    page.uncheck("#show-boundaries")
    expect(page.locator("#overlay polyline.boundary")).to_have_count(0)
    page.check("#show-links")
    page.check("#show-boundaries")
    expect(page.locator("#overlay line.link.cannot")).to_have_count(1)

    lasso(page, 0.0, 0.3)
    page.fill("#new-category", "left")
    page.get_by_role("button", name="Label", exact=True).click()
    expect(annotations).to_have_count(3)
    expect(page.locator("#legend")).to_contain_text("left")
    page.uncheck("#show-labels")
    expect(page.locator("#legend")).not_to_contain_text("left")
    page.check("#show-labels")

    # Edit the label in place; undo brings the old name back.
    label_row = annotations.filter(has_text="label “left”")
    label_row.get_by_role("button", name=re.compile("^edit #")).click()
    page.get_by_role("textbox", name=re.compile("new label for")).fill("west")
    page.keyboard.press("Enter")
    expect(annotations.filter(has_text="label “west”")).to_have_count(1)
    expect(annotations.filter(has_text="label “left”")).to_have_count(0)
    off_inputs(page)
    page.keyboard.press("Control+z")
    expect(annotations.filter(has_text="label “left”")).to_have_count(1)

    # Delete the cannot-link (not the newest annotation): its line goes, the rest stays.
    annotations.filter(has_text="cannot-link").get_by_role(
        "button", name=re.compile("^delete #")
    ).click()
    expect(annotations.filter(has_text="cannot-link")).to_have_count(0)
    expect(annotations).to_have_count(2)
    expect(page.locator("#overlay line.link.cannot")).to_have_count(0)


def test_reload_shows_the_newest_run_and_an_honest_progress_line(
    page: Page, dataset_id: int
) -> None:
    open_dataset_workspace(page, dataset_id)
    run_method(page)
    text = page.get_by_test_id("progress-text")
    expect(text).to_contain_text("succeeded · 100%")
    expect(text).not_to_contain_text("iteration")
    expect(page.get_by_test_id("run-metrics")).to_contain_text("sweeps")
    # How the count was chosen is part of the result line.
    expect(page.get_by_test_id("run-metrics")).to_contain_text("count: n_clusters 2, as set")
    cancel = page.locator("#cancel-run")
    expect(cancel).to_be_disabled()
    assert float(cancel.evaluate("b => getComputedStyle(b).opacity")) < 0.7
    shown = page.locator("#run-select").input_value()

    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.locator("#run-select")).to_have_value(shown)  # shown without being picked
    expect(page.get_by_test_id("plot")).to_have_attribute("data-color-by", "clusters")
    expect(page.get_by_test_id("clusters").locator("tbody tr")).to_have_count(2)
    expect(page.get_by_test_id("progress")).to_have_attribute("data-percent", "100")


def test_shortcut_help_accept_cluster_and_live(page: Page, dataset_id: int) -> None:
    open_dataset_workspace(page, dataset_id)
    off_inputs(page)
    page.keyboard.press("?")
    help_dialog = page.get_by_test_id("shortcut-help")
    expect(help_dialog).to_be_visible()
    expect(help_dialog).to_contain_text("Ctrl+Z")
    expect(help_dialog).to_contain_text("answer the asked pair")
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()

    if not page.locator("#run-select").input_value():
        run_method(page)
    annotations = page.get_by_test_id("annotations").locator("li")
    before = annotations.count()
    rows = page.get_by_test_id("clusters").locator("tbody tr")
    size = int(rows.first.locator("td").nth(1).inner_text())
    rows.first.get_by_role("button", name="label…").click()
    page.get_by_role("textbox", name="label for cluster 0").fill("accepted")
    page.keyboard.press("Enter")
    expect(annotations).to_have_count(before + 1)
    expect(annotations.first).to_contain_text(f"label “accepted”: {size} item(s)")

    # "A" with points of one cluster selected opens the same editor for their cluster.
    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.75, 1.0)
    off_inputs(page)
    page.keyboard.press("a")
    editor = page.get_by_role("textbox", name=re.compile("label for cluster"))
    expect(editor).to_be_focused()
    page.keyboard.press("Escape")

    # Live: the next annotation starts a run by itself and its result is shown. (CEC ignores
    # labels, so the overlapping labels of this module's tests cannot block it.)
    shown = page.locator("#run-select").input_value()
    page.select_option("#algorithm", "cec")
    page.fill("[data-param=n_clusters]", "2")
    page.check("#live")
    lasso(page, 0.0, 0.2)
    page.fill("#new-category", "live-left")
    page.get_by_role("button", name="Label", exact=True).click()
    expect(page.locator("#run-select")).not_to_have_value(shown, timeout=120_000)
    expect(page.get_by_test_id("stale")).to_be_hidden()


def test_the_method_follows_the_links_until_the_user_picks_one(
    page: Page, live_server: str
) -> None:
    """CEC-IB (the default) reads labels only: once the expert draws a must-link the panel
    chooses PPC, which reads links, and says why; undo takes it back; a method the user picks
    stays picked; a reload with links live opens on PPC."""
    rng = np.random.default_rng(11)
    rows = np.vstack([rng.normal([-6.0, 0.0], 1.0, (40, 2)), rng.normal([6.0, 0.0], 1.0, (40, 2))])
    dataset = upload_table(live_server, "follows-links", rows.tolist())
    open_dataset_workspace(page, dataset)
    algorithm = page.locator("#algorithm")
    summary = page.locator("#algorithm-summary")
    expect(algorithm).to_have_value("cec-ib")
    expect(summary).not_to_contain_text("Chosen for your links")

    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.0, 0.3)
    page.get_by_role("button", name="Must-link selection").click()
    expect(page.get_by_test_id("annotations").locator("li")).to_have_count(1)
    expect(algorithm).to_have_value("ppc")
    expect(algorithm).to_have_attribute("data-chosen-by", "annotations")
    expect(summary).to_contain_text("Chosen for your links: PPC uses them.")
    expect(page.locator("[data-param=continuity]")).to_be_attached()  # PPC's own form

    off_inputs(page)
    page.keyboard.press("Control+z")
    expect(page.get_by_test_id("annotations").locator("li")).to_have_count(0)
    expect(algorithm).to_have_value("cec-ib")
    page.keyboard.press("Control+Shift+z")
    expect(algorithm).to_have_value("ppc")

    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(algorithm).to_have_value("ppc")  # the link is live: the page opens on PPC

    page.select_option("#algorithm", "c4s")
    expect(algorithm).to_have_attribute("data-chosen-by", "user")
    off_inputs(page)
    page.keyboard.press("Control+z")
    expect(page.get_by_test_id("annotations").locator("li")).to_have_count(0)
    expect(algorithm).to_have_value("c4s")  # the user's choice is kept
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    runs = page.request.get(f"{live_server}/api/v1/datasets/{dataset}/runs").json()["items"]
    assert [run["algorithm"] for run in runs] == ["c4s"]


def colour_at(page: Page, item: int) -> tuple[int, int, int]:
    """The colour the canvas renderer drew at an item's position."""
    rgba = page.evaluate(
        "(i) => { const c = document.querySelector('#plot');"
        " const [x, y] = window.workspace.plot.toScreen(i); const r = c.width / c.clientWidth;"
        " return Array.from(c.getContext('2d').getImageData("
        "Math.floor(x * r), Math.floor(y * r), 1, 1).data); }",
        item,
    )
    return int(rgba[0]), int(rgba[1]), int(rgba[2])


def test_a_rerun_keeps_each_groups_colour(page: Page, live_server: str) -> None:
    """PPC numbers these two groups the other way round from CEC; the second run follows the
    first's numbers, so neither group changes colour."""
    rng = np.random.default_rng(12)
    rows = np.vstack([rng.normal([-6.0, 0.0], 0.5, (40, 2)), rng.normal([6.0, 0.0], 0.5, (40, 2))])
    dataset = upload_table(live_server, "keeps-colours", rows.tolist())
    sign_in(page)
    page.goto(f"/datasets/{dataset}/workspace?renderer=canvas")  # its pixels can be read
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    run_method(page)
    plot = page.get_by_test_id("plot")
    # The run whose clusters the plot shows (set once its result is drawn).
    expect(plot).to_have_attribute("data-run", re.compile(r"^\d+$"))
    first = str(plot.get_attribute("data-run"))
    left, right = colour_at(page, 0), colour_at(page, 79)
    assert left != right

    page.select_option("#algorithm", "ppc")
    page.fill("[data-param=n_components]", "2")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(plot).not_to_have_attribute("data-run", first, timeout=120_000)
    second = str(plot.get_attribute("data-run"))
    result = page.request.get(f"{live_server}/api/v1/runs/{second}/result").json()
    assert result["metrics"]["numbered_like_run"] == int(first)
    assert result["metrics"]["cluster_order"] == [1, 0]  # PPC's own numbers are swapped
    assert (colour_at(page, 0), colour_at(page, 79)) == (left, right)


def must_link_selection(page: Page) -> None:
    page.get_by_role("button", name="Must-link selection").click()


def label_selection(page: Page) -> None:
    page.fill("#new-category", "left")
    page.get_by_role("button", name="Label", exact=True).click()


@pytest.mark.parametrize(
    "algorithm, size, act",
    [("ppc", "n_components", must_link_selection), ("cec-ib", "n_clusters", label_selection)],
)
def test_live_reruns_continue_the_shown_result(
    page: Page, live_server: str, algorithm: str, size: str, act: Callable[[Page], None]
) -> None:
    """A run from the Run button starts afresh; a live re-run after an annotation asks for a
    warm start (PPC's mixture, CEC-IB's partition), continues the last run of the method and
    says so in the result line."""
    rng = np.random.default_rng(13)
    rows = np.vstack([rng.normal([-6.0, 0.0], 1.0, (50, 2)), rng.normal([6.0, 0.0], 1.0, (50, 2))])
    dataset = upload_table(live_server, f"live-warm-{algorithm}", rows.tolist())
    open_dataset_workspace(page, dataset)
    page.select_option("#algorithm", algorithm)
    page.fill(f"[data-param={size}]", "2")
    expect(page.locator("[data-param=warm_start]")).not_to_be_checked()
    page.get_by_role("button", name="Run", exact=True).click()
    plot = page.get_by_test_id("plot")
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    expect(plot).to_have_attribute("data-run", re.compile(r"^\d+$"))
    first = str(plot.get_attribute("data-run"))
    expect(page.get_by_test_id("run-metrics")).not_to_contain_text("continued")
    fresh = page.request.get(f"{live_server}/api/v1/runs/{first}").json()
    assert fresh["params"].get("warm_start", False) is False

    page.check("#live")
    page.get_by_role("button", name="Lasso").click()
    lasso(page, 0.0, 0.25)
    act(page)
    expect(plot).not_to_have_attribute("data-run", first, timeout=120_000)
    second = str(plot.get_attribute("data-run"))
    expect(page.get_by_test_id("run-metrics")).to_contain_text(f"continued run #{first}")
    run = page.request.get(f"{live_server}/api/v1/runs/{second}").json()
    assert run["algorithm"] == algorithm and run["params"]["warm_start"] is True
    result = page.request.get(f"{live_server}/api/v1/runs/{second}/result").json()
    assert result["metrics"]["warm_start"] == {"from_run": int(first), "continued": True}


def test_a_run_waiting_for_the_engine_says_so_instead_of_sweep_0(
    page: Page, dataset_id: int
) -> None:
    """The server reports `stage: preparing` while it has not fitted the method yet (numba
    compiling after an install); the page says "preparing the engine", not "sweep 0". The
    run's answer is made to say so here: a warm test server has every method ready."""

    def preparing(route: Route) -> None:
        response = route.fetch()
        run = response.json()
        run.update(status="running", stage="preparing", progress_iteration=None)
        route.fulfill(response=response, json=run)

    page.route(re.compile(r".*/api/v1/runs$"), preparing)
    # The real progress events would overwrite the stage at once: the stream says nothing.
    page.route(
        re.compile(r".*/api/v1/runs/\d+/events$"),
        lambda route: route.fulfill(
            status=200, headers={"Content-Type": "text/event-stream"}, body=": quiet\n\n"
        ),
    )
    open_dataset_workspace(page, dataset_id)
    page.select_option("#algorithm", "cec")
    page.get_by_role("button", name="Run", exact=True).click()
    text = page.get_by_test_id("progress-text")
    expect(text).to_contain_text("preparing the engine (first run after install)")
    expect(text).not_to_contain_text("sweep 0")
