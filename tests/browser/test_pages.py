"""The server-rendered pages in a real browser: sign in, projects, upload, dataset table."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import screenshot, sign_in

pytestmark = pytest.mark.browser

NEXT = "Next \u203a"


def test_sign_in_lands_on_projects_with_the_demo_project(page: Page) -> None:
    page.goto("/projects")
    expect(page).to_have_url("/login?next=%2Fprojects")
    sign_in(page)
    expect(page).to_have_url("/projects")
    expect(page.get_by_test_id("whoami")).to_have_text("admin")
    expect(page.get_by_role("link", name="Demo")).to_be_visible()


def test_a_wrong_password_shows_an_error(page: Page) -> None:
    sign_in(page, password="not-the-password")
    expect(page.get_by_test_id("error")).to_have_text("incorrect username or password")


def test_demo_iris_page_shows_statistics_and_pages_through_items(page: Page) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    expect(page.get_by_test_id("datasets")).to_contain_text("digits")
    page.get_by_role("link", name="iris").click()
    expect(page.locator("h1")).to_have_text("iris")
    expect(page.get_by_test_id("n-items")).to_have_text("150")
    expect(page.get_by_test_id("stats").locator("tbody tr")).to_have_count(4)
    items = page.get_by_test_id("items").locator("tbody tr")
    expect(items).to_have_count(50)
    expect(items.first).to_contain_text("setosa")
    page.get_by_role("link", name=NEXT).click()
    expect(page.get_by_test_id("pager")).to_contain_text("Rows 51\u2013100 of 150")
    page.get_by_role("link", name=NEXT).click()
    expect(items.last).to_contain_text("virginica")
    expect(page.get_by_role("link", name=NEXT)).to_have_count(0)
    screenshot(page, "dataset-iris")


def test_demo_picture_is_shown(page: Page) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="coffee").click()
    image = page.get_by_test_id("image-preview")
    expect(image).to_be_visible()
    # Visible (laid out) comes before loaded: wait for the decoded picture (a CI run on a busy
    # machine read naturalWidth 0 right after the element showed).
    page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle())
    assert page.evaluate("el => el.naturalWidth", image.element_handle()) == 600


def test_create_a_project_upload_a_csv_and_see_a_bad_file_refused(
    page: Page, tmp_path: Path
) -> None:
    sign_in(page)
    page.fill("input[name=name]", "Browser project")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("h1")).to_contain_text("Browser project")

    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,seven\n")
    page.set_input_files("input[type=file]", str(bad))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_test_id("error")).to_have_text(
        "non-numeric value 'seven' in feature column 'b' at row 2"
    )
    expect(page.get_by_test_id("datasets")).to_have_count(0)

    good = tmp_path / "cells.csv"
    good.write_text("cell,size,shape,type\nc1,1.5,2,alpha\nc2,2.5,3,beta\nc3,3.5,1,alpha\n")
    page.set_input_files("input[type=file]", str(good))
    page.fill("input[name=name]", "Cells")
    page.fill("input[name=ground_truth_column]", "type")
    page.fill("input[name=id_column]", "cell")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("Cells")
    expect(page.get_by_test_id("facts")).to_contain_text("type: alpha, beta")
    expect(page.get_by_test_id("items").locator("tbody tr")).to_have_count(3)
    expect(page.get_by_test_id("items")).to_contain_text("c2")
    screenshot(page, "dataset-uploaded")


def test_sign_out_ends_the_session(page: Page) -> None:
    sign_in(page)
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url("/login")
    page.goto("/projects")
    expect(page).to_have_url("/login?next=%2Fprojects")
