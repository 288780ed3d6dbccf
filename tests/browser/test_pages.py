"""The server-rendered pages in a real browser: sign in, projects, upload, dataset table."""

from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

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
    # Refused in place: the chosen file is still there to send again, the button usable.
    assert page.eval_on_selector("input[type=file]", "el => el.files[0].name") == "bad.csv"
    expect(page.get_by_role("button", name="Upload")).to_be_enabled()

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


def test_a_large_upload_shows_its_progress_then_opens_the_dataset(
    page: Page, tmp_path: Path
) -> None:
    """The upload is slowed to 2 MB/s by Chromium's own network emulation, so its progress is
    seen as a person sees it on a slow link: a percentage that grows, then the server's turn."""
    sign_in(page)
    page.fill("input[name=name]", "Upload progress")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("h1")).to_contain_text("Upload progress")

    table = tmp_path / "wide.csv"
    rng = np.random.default_rng(0)
    np.savetxt(table, rng.normal(size=(80_000, 8)), delimiter=",", fmt="%.6f",
               header=",".join(f"f{j}" for j in range(8)), comments="")  # fmt: skip
    megabytes = table.stat().st_size / 1e6
    assert megabytes > 5
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 2e6},
    )
    page.set_input_files("input[type=file]", str(table))
    page.get_by_role("button", name="Upload").click()
    status = page.get_by_test_id("upload-status")
    expect(status).to_contain_text("Uploading…")
    expect(page.get_by_role("button", name="Upload")).to_be_disabled()
    seen = []
    for _ in range(3):  # the share sent grows while the bytes go out
        page.wait_for_function(
            "([el, before]) => el.value > before + 0.05",
            arg=[page.get_by_test_id("upload-progress").element_handle(), max(seen, default=0)],
        )
        seen.append(page.get_by_test_id("upload-progress").evaluate("el => el.value"))
    assert seen == sorted(seen) and 0 < seen[0] < seen[-1] < 1
    expect(status).to_contain_text(f"of {megabytes:.1f} MB")
    expect(page.locator("h1")).to_have_text("wide.csv", timeout=30_000)
    expect(page.get_by_test_id("n-items")).to_have_text("80,000")


def test_an_upload_cut_off_midway_says_so_and_keeps_the_form(
    browser: Browser, live_server: str, tmp_path: Path
) -> None:
    """Chromium is taken offline mid-upload. Its own page fixture is not used: the browser logs
    the failed request as a console error, the one error this test expects."""
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        sign_in(page)
        page.fill("input[name=name]", "Cut off")
        page.get_by_role("button", name="Create project").click()
        table = tmp_path / "cut.csv"
        np.savetxt(table, np.random.default_rng(1).normal(size=(80_000, 8)), delimiter=",",
                   fmt="%.6f", header=",".join(f"f{j}" for j in range(8)), comments="")  # fmt: skip
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        slow = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 1e6}
        cdp.send("Network.emulateNetworkConditions", slow)
        page.set_input_files("input[type=file]", str(table))
        page.get_by_role("button", name="Upload").click()
        expect(page.get_by_test_id("upload-status")).to_contain_text("Uploading…")
        page.wait_for_function(
            "el => el.value > 0.1", arg=page.get_by_test_id("upload-progress").element_handle()
        )
        cdp.send("Network.emulateNetworkConditions", {**slow, "offline": True})
        expect(page.get_by_test_id("error")).to_have_text(
            "The connection failed before the server answered: reload the page to see whether "
            "the upload was stored."
        )
        expect(page.get_by_role("button", name="Upload")).to_be_enabled()
        assert page.eval_on_selector("input[type=file]", "el => el.files[0].name") == "cut.csv"
    finally:
        context.close()
    assert [e for e in errors if "ERR_INTERNET_DISCONNECTED" not in e] == []


def test_sign_out_ends_the_session(page: Page) -> None:
    sign_in(page)
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url("/login")
    page.goto("/projects")
    expect(page).to_have_url("/login?next=%2Fprojects")


def test_a_wide_table_says_its_runs_model_its_principal_components(
    page: Page, tmp_path: Path
) -> None:
    sign_in(page)
    page.fill("input[name=name]", "Wide project")
    page.get_by_role("button", name="Create project").click()
    rng = np.random.default_rng(0)
    wide = tmp_path / "wide.csv"
    columns = 120
    rows = rng.normal(size=(80, columns))
    wide.write_text(
        ",".join(f"g{j}" for j in range(columns))
        + "\n"
        + "\n".join(",".join(f"{v:.4f}" for v in row) for row in rows)
        + "\n"
    )
    page.set_input_files("input[type=file]", str(wide))
    page.fill("input[name=name]", "Wide")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("Wide")
    expect(page.get_by_test_id("n-features")).to_have_text("120")
    expect(page.get_by_test_id("model-features")).to_contain_text(
        "its first 50 principal components"
    )
    expect(page.get_by_test_id("model-features")).to_contain_text("120 columns")
