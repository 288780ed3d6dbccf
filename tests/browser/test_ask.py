""" "Ask me" in a real browser: the engine's question highlights two items, S / D / Space answer
or skip it with the keyboard, answers are ordinary annotations (undo works), and in item mode
1-9 label the asked item."""

import pytest
from playwright.sync_api import Page, expect
from sklearn.datasets import make_blobs

from tests.browser.conftest import open_dataset_workspace, upload_table

pytestmark = pytest.mark.browser


def test_ask_me_answers_with_keys_and_undo(page: Page, live_server: str) -> None:
    x, _ = make_blobs(120, centers=3, cluster_std=2.0, random_state=7)
    open_dataset_workspace(page, upload_table(live_server, "ask-blobs", x.tolist()))
    page.select_option("#algorithm", "cec")
    page.fill("[data-param=n_clusters]", "3")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    annotations = page.get_by_test_id("annotations").locator("li")
    expect(annotations).to_have_count(0)

    page.get_by_role("button", name="Ask me").click()
    question = page.get_by_test_id("ask-question")
    expect(question).to_contain_text("are clusters")
    expect(page.get_by_test_id("selection-count")).to_have_text("2")
    asked = question.get_attribute("data-items")
    assert asked is not None and len(asked.split(",")) == 2

    page.locator("body").click(position={"x": 5, "y": 5})  # keyboard focus off the buttons
    page.keyboard.press("d")
    expect(annotations).to_have_count(1)
    expect(annotations.first).to_contain_text("cannot-link")
    expect(question).not_to_have_attribute("data-items", asked)  # answered: never asked again

    skipped = question.get_attribute("data-items")
    page.keyboard.press(" ")
    expect(question).not_to_have_attribute("data-items", skipped or "")
    expect(annotations).to_have_count(1)  # a skip writes nothing

    page.keyboard.press("s")
    expect(annotations).to_have_count(2)
    expect(annotations.first).to_contain_text("must-link")
    page.keyboard.press("Control+z")
    expect(annotations).to_have_count(1)

    # Item questions: 1-9 label the asked item with an existing category.
    page.fill("#new-category", "blob")
    page.get_by_role("button", name="Label", exact=True).click()  # labels the asked pair
    expect(annotations).to_have_count(2)
    page.select_option("#ask-kind", "items")
    expect(page.get_by_test_id("selection-count")).to_have_text("1")
    item = question.get_attribute("data-items")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("1")
    expect(annotations).to_have_count(3)
    expect(annotations.first).to_contain_text("label “blob”: 1 item(s)")
    expect(question).not_to_have_attribute("data-items", item or "")
