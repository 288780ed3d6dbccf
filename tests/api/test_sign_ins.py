"""A user's sign-ins (browser sessions and password-flow access tokens) are listed with where
they came from and revoked one by one: `GET /api/v1/auth/sessions`,
`DELETE /api/v1/auth/sessions/{id}`."""

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.models import ApiToken
from tests.conftest import ADMIN_PASSWORD

pytestmark = pytest.mark.db

SESSIONS = "/api/v1/auth/sessions"
SCRIPT_AGENT = "nightly-import/1.0"
BROWSER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"
SAME_ORIGIN = {"Origin": "http://testserver"}  # what a browser sends with a cookie write


def _client(client: TestClient, address: str, agent: str) -> TestClient:
    other = TestClient(client.app, client=(address, 40000))
    other.headers["User-Agent"] = agent
    return other


def _token(client: TestClient, username: str, password: str) -> dict[str, str]:
    response = client.post("/api/v1/auth/token", data={"username": username, "password": password})
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def _browser(client: TestClient, username: str, password: str) -> None:
    response = client.post(
        "/login", data={"username": username, "password": password}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    assert "workbench_session" in client.cookies


def _listed(client: TestClient, headers: dict[str, str] | None = None) -> list[dict]:  # type: ignore[type-arg]
    response = client.get(SESSIONS, headers=headers or {})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == len(body["items"])
    return body["items"]  # type: ignore[no-any-return]


def test_sign_ins_are_listed_with_their_origin_and_one_is_revoked(client: TestClient) -> None:
    script = _client(client, "198.51.100.20", SCRIPT_AGENT)
    headers = _token(script, "admin", ADMIN_PASSWORD)
    browser = _client(client, "203.0.113.30", BROWSER_AGENT)
    _browser(browser, "admin", ADMIN_PASSWORD)
    api_token = script.post("/api/v1/tokens", json={"name": "ci"}, headers=headers)
    assert api_token.status_code == 201  # named API tokens are not sign-ins: not listed

    items = _listed(script, headers)
    assert [(i["kind"], i["current"]) for i in items] == [("access", True), ("session", False)]
    access, browser_session = items
    assert access["created_from"] == "198.51.100.20" and access["user_agent"] == SCRIPT_AGENT
    assert access["last_used_from"] == "198.51.100.20"
    assert browser_session["created_from"] == "203.0.113.30"
    assert browser_session["user_agent"] == BROWSER_AGENT
    assert browser_session["expires_at"] is not None

    # The browser's view: its own session is the current one.
    seen_by_browser = {i["id"]: i["current"] for i in _listed(browser)}
    assert seen_by_browser == {access["id"]: False, browser_session["id"]: True}

    # Used from somewhere else: the last address follows.
    moved = _client(client, "192.0.2.99", SCRIPT_AGENT)
    assert moved.get("/api/v1/auth/me", headers=headers).status_code == 200
    (access_now,) = [i for i in _listed(moved, headers) if i["kind"] == "access"]
    assert access_now["last_used_from"] == "192.0.2.99"
    assert access_now["created_from"] == "198.51.100.20"

    # The script signs the browser out.
    response = script.delete(f"{SESSIONS}/{browser_session['id']}", headers=headers)
    assert response.status_code == 204, response.text
    assert browser.get("/api/v1/auth/me").status_code == 401
    page = browser.get("/tokens", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    assert [i["id"] for i in _listed(script, headers)] == [access["id"]]
    # Again: still gone, still 204.
    again = script.delete(f"{SESSIONS}/{browser_session['id']}", headers=headers)
    assert again.status_code == 204


def test_revoking_ones_own_session_signs_the_browser_out(client: TestClient) -> None:
    browser = _client(client, "203.0.113.31", BROWSER_AGENT)
    _browser(browser, "admin", ADMIN_PASSWORD)
    (own,) = _listed(browser)
    assert own["current"] and own["kind"] == "session"
    refused = browser.delete(f"{SESSIONS}/{own['id']}")  # a cookie write without its Origin
    assert refused.status_code == 403
    response = browser.delete(f"{SESSIONS}/{own['id']}", headers=SAME_ORIGIN)
    assert response.status_code == 204, response.text
    cleared = response.headers["set-cookie"]
    assert cleared.startswith('workbench_session=""') and "Max-Age=0" in cleared
    assert "workbench_session" not in browser.cookies
    assert browser.get("/api/v1/auth/me").status_code == 401


def test_nobody_else_s_sign_ins_nor_api_tokens_can_be_revoked_here(
    client: TestClient, make_user, session: Session
) -> None:
    bob = make_user("bob")
    admin = _token(client, "admin", ADMIN_PASSWORD)
    (bobs,) = _listed(client, bob)
    named = client.post("/api/v1/tokens", json={"name": "svc"}, headers=admin).json()
    for token_id in (bobs["id"], named["id"], 10**9):
        response = client.delete(f"{SESSIONS}/{token_id}", headers=admin)
        assert response.status_code == 404, response.text
        assert response.json()["code"] == "not_found"
    session.expire_all()
    assert all(t.revoked_at is None for t in session.query(ApiToken))
    assert client.get("/api/v1/auth/me", headers=bob).status_code == 200
    assert client.get(SESSIONS).status_code == 401  # signed-in users only


def test_signed_out_and_expired_sign_ins_are_not_listed(
    client: TestClient, session: Session
) -> None:
    first = _token(client, "admin", ADMIN_PASSWORD)
    second = _token(client, "admin", ADMIN_PASSWORD)
    assert len(_listed(client, first)) == 2
    assert client.post("/api/v1/auth/logout", headers=second).status_code == 204
    assert len(_listed(client, first)) == 1
    third = _token(client, "admin", ADMIN_PASSWORD)
    third_id = next(i["id"] for i in _listed(client, third) if i["current"])
    row = session.get(ApiToken, third_id)
    assert row is not None
    row.expires_at = row.created_at  # expired at once
    session.commit()
    assert [i["current"] for i in _listed(client, first)] == [True]


def test_a_long_user_agent_is_cut_not_refused(client: TestClient) -> None:
    agent = "x" * 5000
    long_one = _client(client, "198.51.100.21", agent)
    headers = _token(long_one, "admin", ADMIN_PASSWORD)
    (item,) = _listed(long_one, headers)
    assert item["user_agent"] == agent[:200]
