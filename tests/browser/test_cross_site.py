"""Hostile pages in a real browser: a page on another port of the same host tries to act with
the signed-in user's cookie (which SameSite=Lax does not stop: same host, same site), and the
Content-Security-Policy leaves the workspace working."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ADMIN_PASSWORD, sign_in

pytestmark = pytest.mark.browser

ATTACK = """<!doctype html>
<html><body>
<p>You won a prize!</p>
<form id="attack" method="post" action="{app}/projects">
  <input name="name" value="{name}"><input name="description" value="made by another site">
</form>
<script>
  fetch("{app}/api/v1/projects", {{
    method: "POST", mode: "no-cors", credentials: "include",
    headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{name: "{name} (fetch)"}})
  }}).finally(() => document.getElementById("attack").submit());
</script>
</body></html>"""


@pytest.fixture(scope="module")
def attacker(live_server: str) -> Iterator[str]:
    """A tiny site on another port of 127.0.0.1 whose page posts to the app on load."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.rsplit("=", 1)[-1] if "=" in self.path else "CSRF project"
            body = ATTACK.format(app=live_server, name=name).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def project_names(live_server: str) -> set[str]:
    token = httpx.post(
        f"{live_server}/api/v1/auth/token",
        data={"username": "admin", "password": ADMIN_PASSWORD},
    ).json()["access_token"]
    page = httpx.get(
        f"{live_server}/api/v1/projects",
        params={"limit": 1000},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    return {p["name"] for p in page["items"]}


def test_a_page_on_another_port_cannot_create_a_project_with_the_session_cookie(
    page: Page, live_server: str, attacker: str
) -> None:
    sign_in(page)
    expect(page).to_have_url("/projects")
    # The attack opens in another tab of the same browser context (same cookies); its refused
    # requests log console errors there, which are expected, so that tab is not watched.
    tab = page.context.new_page()
    name = "csrf-victim-project"
    with tab.expect_response(
        lambda r: r.url == f"{live_server}/projects" and r.request.method == "POST"
    ) as posted:
        tab.goto(f"{attacker}/attack?name={name}")
    response = posted.value
    assert response.status == 403
    sent = response.request.all_headers()
    assert sent["origin"] == attacker
    assert "workbench_session=" in sent.get("cookie", "")  # SameSite=Lax let the cookie go
    expect(tab.get_by_test_id("error")).to_contain_text("cross-site request refused")
    tab.close()

    names = project_names(live_server)
    assert name not in names
    assert f"{name} (fetch)" not in names
    # Still signed in: the refused request did not touch the session either.
    page.goto("/projects")
    expect(page.get_by_test_id("whoami")).to_have_text("admin")


def test_the_same_origin_form_still_creates_a_project(page: Page, live_server: str) -> None:
    sign_in(page)
    page.fill("input[name=name]", "Same-origin project")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("h1")).to_contain_text("Same-origin project")
    assert "Same-origin project" in project_names(live_server)


CSP_WATCH = (
    "window.__cspViolations = [];"
    "document.addEventListener('securitypolicyviolation', (e) =>"
    " window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));"
)


def test_the_workspace_runs_under_its_content_security_policy(page: Page) -> None:
    page.add_init_script(CSP_WATCH)
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="iris", exact=True).click()
    with page.expect_response(lambda r: r.url.endswith("/workspace")) as loaded:
        page.get_by_role("link", name="Open workspace").click()
    policy = loaded.value.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "'unsafe-inline'" not in policy
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-rendered", "150")
    # The parameter form is never submitted (its inline onsubmit moved to page.js).
    page.evaluate("document.getElementById('params').requestSubmit()")
    page.wait_for_timeout(300)
    assert page.url.endswith("/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true")
    assert page.evaluate("window.__cspViolations") == []


def test_inline_script_is_refused_on_pages(page: Page) -> None:
    sign_in(page)
    # Chrome logs the refusal as a console error, so this runs in a tab that is not watched.
    tab = page.context.new_page()
    tab.add_init_script(CSP_WATCH)
    tab.goto("/projects")
    ran = tab.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1';"
        " document.head.append(s); return window.__ran === 1; }"
    )
    assert ran is False
    tab.wait_for_function("window.__cspViolations.length === 1")
    assert tab.evaluate("window.__cspViolations[0]").startswith("script-src")
    tab.close()


def test_deleting_a_dataset_still_asks_first(page: Page, live_server: str) -> None:
    token = httpx.post(
        f"{live_server}/api/v1/auth/token",
        data={"username": "admin", "password": ADMIN_PASSWORD},
    ).json()["access_token"]
    bearer = {"Authorization": f"Bearer {token}"}
    project = httpx.post(
        f"{live_server}/api/v1/projects", json={"name": "Doomed"}, headers=bearer
    ).json()
    dataset = httpx.post(
        f"{live_server}/api/v1/projects/{project['id']}/datasets",
        files={"file": ("doomed.csv", b"a,b\n1,2\n3,4\n", "text/csv")},
        headers=bearer,
    ).json()
    sign_in(page)
    page.goto(f"/datasets/{dataset['id']}")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete dataset").click()
    page.wait_for_timeout(300)
    expect(page.locator("h1")).to_have_text("doomed.csv")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete dataset").click()
    expect(page).to_have_url(f"/projects/{project['id']}")
    gone = httpx.get(f"{live_server}/api/v1/datasets/{dataset['id']}", headers=bearer)
    assert gone.status_code == 404
