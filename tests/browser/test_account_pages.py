"""Members and API tokens have pages, in a real browser: an owner adds, re-roles and removes a
member (and is told why the last owner cannot leave); a user makes a token, sees its secret
once, uses it, and revokes it; a user signs out another browser, then their own. The served
app trusts no forwarded address by default."""

import re

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import ADMIN_PASSWORD, sign_in

pytestmark = pytest.mark.browser


def _admin_api(live_server: str) -> tuple[httpx.Client, dict[str, str]]:
    api = httpx.Client(base_url=f"{live_server}/api/v1", timeout=30)
    token = api.post("/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD})
    return api, {"Authorization": f"Bearer {token.json()['access_token']}"}


def test_an_owner_manages_members(page: Page, live_server: str) -> None:
    api, headers = _admin_api(live_server)
    created = api.post(
        "/users", json={"username": "curator", "password": "curator-pass"}, headers=headers
    )
    assert created.status_code == 201, created.text
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    members = page.get_by_test_id("members")
    form = page.get_by_test_id("member-form")
    form.get_by_label("User").fill("curator")
    form.get_by_label("Role").select_option("editor")
    form.get_by_role("button", name="Add or change role").click()
    expect(members.locator("tr", has_text="curator")).to_contain_text("editor")

    form.get_by_label("User").fill("curator")
    form.get_by_label("Role").select_option("viewer")
    form.get_by_role("button", name="Add or change role").click()
    expect(members.locator("tr", has_text="curator")).to_contain_text("viewer")
    project_id = page.url.split("/projects/")[1].split("#")[0]
    listed = api.get(f"/projects/{project_id}/members", headers=headers).json()["items"]
    assert {"username": "curator", "role": "viewer"} in listed

    form.get_by_label("User").fill("nobody-here")
    form.get_by_role("button", name="Add or change role").click()
    expect(page.get_by_test_id("member-error")).to_be_visible()

    page.get_by_role("button", name="remove curator").click()
    expect(members.locator("tr", has_text="curator")).to_have_count(0)
    page.get_by_role("button", name="remove admin").click()  # the only owner
    expect(page.get_by_test_id("member-error")).to_contain_text("owner")
    expect(members.locator("tr", has_text="admin")).to_have_count(1)


def test_a_user_makes_uses_and_revokes_a_token(page: Page, live_server: str) -> None:
    sign_in(page)
    page.get_by_role("link", name="Sessions and tokens").click()
    page.get_by_test_id("token-form").get_by_label("Name").fill("nightly import")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_test_id("token-secret").inner_text()
    assert len(secret) > 20
    row = page.get_by_test_id("tokens").locator("tr", has_text="nightly import")
    expect(row).to_contain_text("active")
    expect(row).to_contain_text(secret[:12])
    page.reload()  # a reload makes no second token, and the secret is not shown again
    expect(row).to_have_count(1)
    expect(page.get_by_test_id("token-secret")).to_have_count(0)

    with httpx.Client(base_url=f"{live_server}/api/v1", timeout=30) as api:
        bearer = {"Authorization": f"Bearer {secret}"}
        assert api.get("/projects", headers=bearer).status_code == 200
        page.goto("/tokens")  # the secret is shown only once
        expect(page.get_by_test_id("token-secret")).to_have_count(0)
        page.get_by_role("button", name="revoke nightly import").click()
        expect(row).to_contain_text("revoked")
        assert api.get("/projects", headers=bearer).status_code == 401


def test_the_served_app_ignores_forwarded_addresses(live_server: str) -> None:
    """`app serve` runs uvicorn with its proxy headers off (it would believe X-Forwarded-For
    from 127.0.0.1): a local client rotating the header is still one address to the login
    throttle, so its sixth guess at one account is refused unchecked."""
    with httpx.Client(base_url=f"{live_server}/api/v1", timeout=30) as api:
        codes = [
            api.post(
                "/auth/token",
                data={"username": "mallory", "password": "guess"},
                headers={"X-Forwarded-For": f"192.0.2.{i}"},
            ).status_code
            for i in range(6)
        ]
    assert codes == [401] * 5 + [429]


def test_a_user_signs_out_a_browser_left_signed_in_elsewhere(
    page: Page, browser: Browser, live_server: str
) -> None:
    api, headers = _admin_api(live_server)
    created = api.post(
        "/users", json={"username": "roamer", "password": "roamer-pass"}, headers=headers
    )
    assert created.status_code == 201, created.text
    elsewhere = browser.new_context(
        base_url=live_server, user_agent="Mozilla/5.0 (Elsewhere) OtherBrowser/1.0"
    )
    try:
        other = elsewhere.new_page()
        sign_in(other, "roamer", "roamer-pass")
        expect(other.get_by_role("link", name="Sessions and tokens")).to_be_visible()

        sign_in(page, "roamer", "roamer-pass")
        page.get_by_role("link", name="Sessions and tokens").click()
        rows = page.get_by_test_id("sign-in")
        expect(rows).to_have_count(2)
        mine = page.locator("[data-testid=sign-in][data-current=true]")
        expect(mine).to_contain_text("(this one)")
        expect(mine).to_contain_text("127.0.0.1")
        theirs = page.locator("[data-testid=sign-in]:not([data-current])")
        expect(theirs).to_contain_text("OtherBrowser/1.0")
        theirs.get_by_role("button").click()
        expect(rows).to_have_count(1)

        other.reload()  # the other browser is signed out
        expect(other).to_have_url(re.compile(r"/login"))

        page.get_by_role("button", name="sign out this session").click()
        expect(page).to_have_url(re.compile(r"/login"))
        page.goto("/tokens")
        expect(page).to_have_url(re.compile(r"/login"))
    finally:
        elsewhere.close()
