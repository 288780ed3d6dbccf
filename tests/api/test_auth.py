"""Authentication: bearer tokens (OAuth2 password flow and named API tokens) and the session
cookie; every endpoint but health and login needs one."""

import hashlib
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import ApiToken
from tests.conftest import ADMIN_PASSWORD

pytestmark = pytest.mark.db

PUBLIC = {("GET", "/api/v1/health"), ("POST", "/api/v1/auth/token")}


def _api_routes(client: TestClient) -> list[tuple[str, str]]:
    paths = client.get("/openapi.json").json()["paths"]
    return [(method.upper(), path) for path, ops in paths.items() for method in ops]


def test_health_needs_no_credentials(client: TestClient) -> None:
    response = client.get("/api/v1/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["jobs"] == {
        "executor": "inline",
        "workers": 3,
        "workers_per_user": 2,
        "waiting": 0,
    }


def test_every_other_endpoint_answers_401_without_credentials(client: TestClient) -> None:
    routes = _api_routes(client)
    assert len(routes) > 10
    for method, path in routes:
        if (method, path) in PUBLIC:
            continue
        url = re.sub(r"\{\w+_id\}", "1", path).replace("{username}", "someone")
        response = client.request(method, url)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["code"] == "not_authenticated"
        assert response.headers["WWW-Authenticate"] == "Bearer"


def test_password_flow_returns_a_bearer_token(client: TestClient) -> None:
    response = client.post(
        "/api/v1/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "token_type"}
    assert body["token_type"] == "bearer"
    me = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200
    assert me.json()["username"] == "admin"


@pytest.mark.parametrize(
    ("username", "password"), [("admin", "wrong-password"), ("nobody", ADMIN_PASSWORD)]
)
def test_wrong_credentials_get_401(client: TestClient, username: str, password: str) -> None:
    response = client.post("/api/v1/auth/token", data={"username": username, "password": password})
    assert response.status_code == 401
    assert response.json()["detail"] == "incorrect username or password"


def test_an_invented_token_gets_401(client: TestClient) -> None:
    response = client.get("/api/v1/projects", headers={"Authorization": "Bearer cwb_invented"})
    assert response.status_code == 401


def test_named_api_tokens_are_stored_hashed_listed_and_revocable(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    created = client.post("/api/v1/tokens", json={"name": "pipeline"}, headers=admin_headers)
    assert created.status_code == 201
    secret = created.json()["token"]
    stored = session.scalars(select(ApiToken).where(ApiToken.name == "pipeline")).one()
    assert stored.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in (stored.token_hash, stored.prefix)

    bearer = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/projects", headers=bearer).status_code == 200

    listed = client.get("/api/v1/tokens", headers=admin_headers).json()
    assert listed["total"] == 1
    assert listed["items"][0]["name"] == "pipeline"
    assert "token" not in listed["items"][0]
    assert listed["items"][0]["last_used_at"] is not None

    token_id = created.json()["id"]
    revoked = client.delete(f"/api/v1/tokens/{token_id}", headers=admin_headers)
    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"] is not None
    assert client.get("/api/v1/projects", headers=bearer).status_code == 401


def test_a_user_cannot_revoke_someone_elses_token(
    client: TestClient, admin_headers: dict[str, str], make_user
) -> None:
    created = client.post("/api/v1/tokens", json={"name": "mine"}, headers=admin_headers).json()
    other = make_user("other")
    assert client.delete(f"/api/v1/tokens/{created['id']}", headers=other).status_code == 404


def test_browser_login_sets_an_http_only_samesite_cookie_and_logout_revokes_it(
    client: TestClient,
) -> None:
    response = client.post(
        "/login",
        data={"username": "admin", "password": ADMIN_PASSWORD, "next": "/projects"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/projects"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert client.get("/api/v1/auth/me").json()["username"] == "admin"
    secret = client.cookies["workbench_session"]

    # A browser sends the page's Origin with the form; the cookie alone is refused (403).
    logout = client.post("/logout", headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert logout.status_code == 303
    client.cookies.clear()
    client.cookies.set("workbench_session", secret)  # a copy of the old cookie is dead
    assert client.get("/api/v1/auth/me").status_code == 401


def test_login_refuses_open_redirects(client: TestClient) -> None:
    response = client.post(
        "/login",
        data={"username": "admin", "password": ADMIN_PASSWORD, "next": "//evil.example/x"},
        follow_redirects=False,
    )
    assert response.headers["location"] == "/projects"


def test_a_bad_password_on_the_login_page_shows_an_error(client: TestClient) -> None:
    response = client.post("/login", data={"username": "admin", "password": "nope"})
    assert response.status_code == 200  # the form again, with the message
    assert "incorrect username or password" in response.text


def test_pages_redirect_to_login_without_a_session(client: TestClient) -> None:
    response = client.get("/projects", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fprojects"


def test_only_admins_create_users(
    client: TestClient, admin_headers: dict[str, str], make_user
) -> None:
    user = make_user("plain")
    body = {"username": "new", "password": "long-enough-pw"}
    assert client.post("/api/v1/users", json=body, headers=user).status_code == 403
    created = client.post("/api/v1/users", json=body, headers=admin_headers)
    assert created.status_code == 201
    assert client.post("/api/v1/users", json=body, headers=admin_headers).status_code == 409
