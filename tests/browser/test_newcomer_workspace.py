"""The table workspace as a newcomer meets it, in a real browser with real mouse and keys: the
README's tour (Shift+drag, press 1, name it, Enter) works on a dataset with no categories yet,
keys keep their numbers across a reload, Live says why it stopped and points at the conflicts,
Ask me and the "?" help fit the window, and past nine categories a find box labels by name."""

import httpx
import numpy as np
import pytest
from playwright.sync_api import Locator, Page, Request, expect

from tests.browser.conftest import lasso, open_dataset_workspace, selected, upload_table

pytestmark = pytest.mark.browser


def three_groups(live_server: str, name: str) -> int:
    """Three clear groups along x: lassos over the left, middle and right of the plot."""
    rng = np.random.default_rng(21)
    centres = [[-8.0, 0.0], [0.0, 0.0], [8.0, 0.0]]
    rows = np.vstack([rng.normal(c, 1.0, size=(30, 2)) for c in centres])
    return upload_table(live_server, name, rows.tolist())


def shift_lasso(page: Page, x0: float, x1: float) -> None:
    """Shift+drag, the lasso of any mode (the page opens in pan mode)."""
    page.keyboard.down("Shift")
    lasso(page, x0, x1)
    page.keyboard.up("Shift")
    expect(page.get_by_test_id("selection-count")).not_to_have_text("0")


def off_inputs(page: Page) -> None:
    page.locator("body").click(position={"x": 5, "y": 5})


def name_with_key(page: Page, key: str, name: str) -> None:
    page.keyboard.press(key)
    expect(page.locator("#name-category-input")).to_be_focused()
    page.keyboard.type(name)
    page.keyboard.press("Enter")


def inside(inner: Locator, outer: dict[str, float]) -> bool:
    box = inner.bounding_box()
    assert box is not None
    return (
        box["x"] >= outer["x"] - 0.5
        and box["y"] >= outer["y"] - 0.5
        and box["x"] + box["width"] <= outer["x"] + outer["width"] + 0.5
        and box["y"] + box["height"] <= outer["y"] + outer["height"] + 0.5
    )


def viewport(page: Page) -> dict[str, float]:
    size = page.viewport_size
    assert size is not None
    return {"x": 0, "y": 0, "width": size["width"], "height": size["height"]}


def test_keys_ask_for_a_name_and_keep_their_numbers_after_a_reload(
    page: Page, live_server: str
) -> None:
    open_dataset_workspace(page, three_groups(live_server, "newcomer-keys"))
    annotations = page.get_by_test_id("annotations").locator("li")
    prompt = page.get_by_test_id("name-category")
    status = page.get_by_test_id("status")
    off_inputs(page)
    page.keyboard.press("1")  # nothing selected: say what to do first
    expect(status).to_contain_text("Select points first (Shift+drag")
    expect(prompt).to_be_hidden()

    shift_lasso(page, 0.0, 0.25)
    page.keyboard.press("1")
    expect(prompt).to_be_visible()
    expect(page.locator("#name-category-input")).to_be_focused()
    expect(page.locator("#name-category-input")).to_have_value("")  # the key is no text
    page.keyboard.type("zeta")
    page.keyboard.press("Escape")  # cancels: nothing stored, the selection kept
    expect(prompt).to_be_hidden()
    expect(annotations).to_have_count(0)
    assert selected(page) > 0

    posts: list[Request] = []
    page.on(
        "request",
        lambda r: posts.append(r) if r.method == "POST" and "/annotations" in r.url else None,
    )
    name_with_key(page, "1", "zeta")
    expect(annotations).to_have_count(1)
    expect(annotations.first).to_contain_text("label “zeta”")
    assert len(posts) == 1  # the category comes with its first label, in one request
    expect(prompt).to_be_hidden()

    shift_lasso(page, 0.4, 0.6)
    name_with_key(page, "2", "alpha")  # sorts before "zeta", yet is key 2
    expect(annotations).to_have_count(2)
    chips = page.get_by_test_id("categories").locator(".chip")
    expect(chips).to_have_text(["1 zeta", "2 alpha"])
    expect(chips.locator("kbd")).to_have_text(["1", "2"])

    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(chips).to_have_text(["1 zeta", "2 alpha"])
    shift_lasso(page, 0.75, 1.0)
    page.keyboard.press("1")
    expect(annotations).to_have_count(3)
    expect(annotations.first).to_contain_text("label “zeta”")
    expect(prompt).to_be_hidden()


def test_live_says_why_it_stopped_and_points_at_the_conflicts(page: Page, live_server: str) -> None:
    open_dataset_workspace(page, three_groups(live_server, "newcomer-live"))
    page.select_option("#algorithm", "cec-ib")  # it reads labels: two on one item block it
    page.fill("[data-param=n_clusters]", "3")
    page.check("#live")
    note = page.get_by_test_id("run-note")
    conflicts = page.locator("#conflicts-box")
    off_inputs(page)
    shift_lasso(page, 0.0, 0.25)
    name_with_key(page, "1", "A")
    # Live runs; once that run is done (so that no run is left to cancel or posted after the
    # next act), label the same points B: a conflict, and Live cannot run.
    progress = page.get_by_test_id("progress")
    expect(progress).to_have_attribute("data-status", "succeeded", timeout=120_000)
    name_with_key(page, "2", "B")
    expect(page.get_by_test_id("conflicts").locator("li")).to_have_count(1)
    expect(note).to_contain_text("Live paused")
    expect(note).to_contain_text("contradict")
    expect(note).to_be_in_viewport()
    expect(conflicts).not_to_be_in_viewport()  # far down the left panel

    note.get_by_role("button", name="Show conflicts").click()
    expect(conflicts).to_be_in_viewport()
    expect(conflicts).to_have_class("conflicts pointed")

    off_inputs(page)
    page.keyboard.press("Control+z")  # resolved: Live runs again and the note goes
    expect(page.get_by_test_id("conflicts").locator("li")).to_have_count(0)
    expect(note).to_be_hidden()
    expect(progress).to_have_attribute("data-status", "succeeded", timeout=120_000)


def test_ask_me_and_the_shortcut_help_fit_the_window(page: Page, live_server: str) -> None:
    open_dataset_workspace(page, three_groups(live_server, "newcomer-ask"))
    page.select_option("#algorithm", "cec")
    page.fill("[data-param=n_clusters]", "3")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    page.get_by_role("button", name="Ask me").click()
    question = page.get_by_test_id("ask-question")
    expect(question).to_contain_text("Same group?")
    expect(page.get_by_test_id("selection-count")).to_have_text("2")
    left_panel = page.locator(".panel.tools").bounding_box()
    ask_panel = page.get_by_test_id("ask-panel").bounding_box()
    assert left_panel is not None and ask_panel is not None
    for name in ["Same (S)", "Different (D)", "Skip (Space)"]:
        button = page.get_by_role("button", name=name, exact=True)
        expect(button).to_be_visible()
        assert inside(button, viewport(page)), name
        assert inside(button, left_panel), name
        assert inside(button, ask_panel), name
    assert inside(question, viewport(page)) and inside(question, left_panel)

    help_dialog = page.get_by_test_id("shortcut-help")
    close = help_dialog.get_by_role("button", name="Close")
    for height in (900, 600):
        page.set_viewport_size({"width": 1280, "height": height})
        off_inputs(page)
        page.keyboard.press("?")
        expect(help_dialog).to_be_visible()
        assert inside(help_dialog, viewport(page)), height
        assert inside(close, viewport(page)), height
        page.keyboard.press("?" if height == 900 else "Escape")
        expect(help_dialog).to_be_hidden()
    expect(page.get_by_test_id("selection-count")).to_have_text("2")  # Esc closed only the help


def test_a_find_box_labels_past_nine_categories(
    page: Page, live_server: str, api: httpx.Client
) -> None:
    dataset = three_groups(live_server, "newcomer-many")
    names = ["red", "orange", "yellow", "green", "blue", "indigo", "violet", "black", "white"]
    for item, name in enumerate([*names, "grey"]):
        body = {"kind": "label", "items": [item], "label": name}
        api.post(f"/datasets/{dataset}/annotations", json=body).raise_for_status()
    open_dataset_workspace(page, dataset)
    chips = page.get_by_test_id("categories").locator(".chip")
    expect(chips).to_have_count(10)
    expect(chips.nth(9)).to_have_text("grey")  # the tenth has no key
    find = page.get_by_test_id("find-category")
    expect(find).to_be_visible()

    off_inputs(page)
    shift_lasso(page, 0.75, 1.0)
    page.keyboard.press("/")
    expect(find).to_be_focused()
    page.keyboard.type("vio")
    expect(chips.locator("visible=true")).to_have_text(["7 violet"])  # the filter shows the pick
    page.keyboard.press("Enter")
    annotations = page.get_by_test_id("annotations").locator("li")
    expect(annotations).to_have_count(11)
    expect(annotations.first).to_contain_text("label “violet”")
    expect(find).to_have_value("")
    expect(chips.locator("visible=true")).to_have_count(10)
