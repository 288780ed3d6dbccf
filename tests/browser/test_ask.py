""" "Ask me" in a real browser: the engine's question highlights two items, S / D / Space answer
or skip it with the keyboard, answers are ordinary annotations (undo works), and in item mode
1-9 label the asked item."""

import httpx
import pytest
from playwright.sync_api import Page, expect
from sklearn.datasets import make_blobs

from tests.browser.conftest import ADMIN_PASSWORD, sign_in

pytestmark = pytest.mark.browser


def _upload_blobs(live_server: str) -> int:
    """A dataset of this module's own (the live server and its demo data are shared)."""
    x, _ = make_blobs(120, centers=3, cluster_std=2.0, random_state=7)
    csv = "a,b\n" + "\n".join(f"{u:.6f},{v:.6f}" for u, v in x.tolist())
    with httpx.Client(base_url=f"{live_server}/api/v1", timeout=30) as api:
        token = api.post("/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD})
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        projects = api.get("/projects", headers=headers).json()["items"]
        created = api.post(
            f"/projects/{projects[0]['id']}/datasets",
            files={"file": ("ask-blobs.csv", csv.encode(), "text/csv")},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        return int(created.json()["id"])


def test_ask_me_answers_with_keys_and_undo(page: Page, live_server: str) -> None:
    dataset_id = _upload_blobs(live_server)
    sign_in(page)
    page.goto(f"/datasets/{dataset_id}/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
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
