"""Cross-site request refusal (Origin/Referer check on cookie-authenticated writes) and the
security headers on every response."""

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.config import Settings
from app.main import create_app
from app.web.security import origin_of
from app.web.templating import TEMPLATES_DIR
from tests.conftest import ADMIN_PASSWORD, row_counts

pytestmark = pytest.mark.db

OWN = "http://testserver"  # TestClient's base URL
FOREIGN = {
    "another port of the same host": "http://testserver:8001",
    "another host": "http://evil.example",
    "https instead of http": "https://testserver",
    "null": "null",
}


def sign_in_with_cookie(client: TestClient) -> str:
    response = client.post(
        "/login",
        data={"username": "admin", "password": ADMIN_PASSWORD},
        headers={"Origin": OWN},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    cookie = client.cookies.get("workbench_session")
    assert cookie
    return cookie


@pytest.mark.parametrize(
    ("value", "origin"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("HTTP://Example.ORG", "http://example.org:80"),
        ("https://example.org/some/page?q=1", "https://example.org:443"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("null", None),
        ("", None),
        ("http://host:notaport", None),
    ],
)
def test_origins_are_compared_as_scheme_host_and_port(value: str, origin: str | None) -> None:
    assert origin_of(value) == origin


@pytest.mark.parametrize("foreign", list(FOREIGN))
def test_a_cookie_request_from_another_origin_is_refused_and_writes_nothing(
    client: TestClient, session: Session, foreign: str
) -> None:
    sign_in_with_cookie(client)
    before = row_counts(session)
    headers = {"Origin": FOREIGN[foreign]}

    api = client.post("/api/v1/projects", json={"name": "Evil"}, headers=headers)
    assert api.status_code == 403, api.text
    assert api.json()["code"] == "cross_site_request"
    assert "cross-site request refused" in api.json()["detail"]

    form = client.post("/projects", data={"name": "Evil"}, headers=headers, follow_redirects=False)
    assert form.status_code == 403
    assert "cross-site request refused" in form.text
    assert form.headers["content-type"].startswith("text/html")

    logout = client.post("/logout", headers=headers, follow_redirects=False)
    assert logout.status_code == 403
    assert row_counts(session) == before
    assert client.get("/api/v1/auth/me").status_code == 200  # the session survived


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        (
            {"Referer": "http://testserver:8001/attack.html"},
            "its Referer is http://testserver:8001",
        ),
        ({}, "must carry an Origin or Referer"),
    ],
    ids=["foreign referer without origin", "neither origin nor referer"],
)
def test_a_cookie_write_without_a_same_origin_header_is_refused(
    client: TestClient, session: Session, headers: dict[str, str], reason: str
) -> None:
    sign_in_with_cookie(client)
    before = row_counts(session)
    response = client.post("/api/v1/projects", json={"name": "Evil"}, headers=headers)
    assert response.status_code == 403
    assert reason in response.json()["detail"]
    assert row_counts(session) == before


def test_same_origin_cookie_writes_pass_by_origin_or_referer(
    client: TestClient, session: Session
) -> None:
    sign_in_with_cookie(client)
    by_origin = client.post("/api/v1/projects", json={"name": "A"}, headers={"Origin": OWN})
    assert by_origin.status_code == 201, by_origin.text
    by_referer = client.post(
        "/projects",
        data={"name": "B"},
        headers={"Referer": f"{OWN}/projects"},
        follow_redirects=False,
    )
    assert by_referer.status_code == 303, by_referer.text
    names = {p["name"] for p in client.get("/api/v1/projects").json()["items"]}
    assert names == {"A", "B"}


def test_reads_with_the_cookie_need_no_origin(client: TestClient) -> None:
    sign_in_with_cookie(client)
    response = client.get("/api/v1/projects", headers={"Origin": "http://evil.example"})
    assert response.status_code == 200


def test_bearer_requests_are_exempt_from_the_origin_check(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    foreign = {**admin_headers, "Origin": "http://evil.example"}
    response = client.post("/api/v1/projects", json={"name": "Scripted"}, headers=foreign)
    assert response.status_code == 201, response.text
    plain = client.post("/api/v1/projects", json={"name": "No origin"}, headers=admin_headers)
    assert plain.status_code == 201


def test_an_empty_bearer_header_does_not_exempt_a_cookie_request(
    client: TestClient, session: Session
) -> None:
    sign_in_with_cookie(client)
    before = row_counts(session)
    response = client.post(
        "/api/v1/projects",
        json={"name": "Evil"},
        headers={"Authorization": "Bearer ", "Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert row_counts(session) == before


def test_a_login_form_posted_from_another_origin_is_refused(
    client: TestClient, session: Session
) -> None:
    before = row_counts(session)
    response = client.post(
        "/login",
        data={"username": "admin", "password": ADMIN_PASSWORD},
        headers={"Origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert response.status_code == 403
    assert "workbench_session" not in client.cookies
    assert row_counts(session) == before


@pytest.fixture
def proxied_client(db_engine: object, settings: Settings) -> Iterator[TestClient]:
    """A server behind a proxy that does not pass the public Host on."""
    trusted = settings.model_copy(update={"trusted_origins": "https://workbench.example"})
    with TestClient(create_app(trusted)) as test_client:
        yield test_client


def test_trusted_origins_are_accepted_too(client: TestClient, proxied_client: TestClient) -> None:
    sign_in_with_cookie(proxied_client)
    ok = proxied_client.post(
        "/api/v1/projects",
        json={"name": "Proxied"},
        headers={"Origin": "https://workbench.example"},
    )
    assert ok.status_code == 201, ok.text
    refused = proxied_client.post(
        "/api/v1/projects", json={"name": "Evil"}, headers={"Origin": "https://other.example"}
    )
    assert refused.status_code == 403


HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


def _assert_security_headers(response, *, eval_allowed: bool = False) -> None:  # type: ignore[no-untyped-def]
    for name, value in HEADERS.items():
        assert response.headers.get(name) == value, (response.url, name)
    csp = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["frame-ancestors"] == "'none'"
    assert directives["default-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-inline'" not in directives["style-src"]
    assert ("'unsafe-eval'" in directives["script-src"]) == eval_allowed


def test_security_headers_on_pages_api_static_files_and_errors(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    responses = [
        client.get("/login"),
        client.get("/api/v1/health"),
        client.get("/api/v1/projects", headers=admin_headers),
        client.get("/static/css/app.css"),
        client.get("/static/js/page.js"),
        client.get("/static/vendor/regl-scatterplot/regl-scatterplot.js"),
        client.get("/api/v1/projects/999", headers=admin_headers),  # an API error
        client.get("/static/missing.js"),
        client.post("/api/v1/projects", json={"name": "x"}),  # 401
    ]
    assert [r.status_code for r in responses] == [200, 200, 200, 200, 200, 200, 404, 404, 401]
    for response in responses:
        _assert_security_headers(response)


def test_only_the_workspace_page_may_evaluate_code(client: TestClient, project_id: int) -> None:
    sign_in_with_cookie(client)
    upload = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("t.csv", b"a,b\n1,2\n3,4\n5,7\n", "text/csv")},
        headers={"Origin": OWN},
    )
    assert upload.status_code == 201, upload.text
    dataset_id = upload.json()["id"]
    workspace = client.get(f"/datasets/{dataset_id}/workspace")
    assert workspace.status_code == 200
    _assert_security_headers(workspace, eval_allowed=True)
    assert "worker-src 'self' blob:" in workspace.headers["content-security-policy"]
    page = client.get(f"/datasets/{dataset_id}")
    _assert_security_headers(page)
    assert "blob:" not in page.headers["content-security-policy"]


def test_templates_hold_no_inline_script_style_or_handlers() -> None:
    """The policy forbids inline code; a template that used it would break in the browser."""
    for template in TEMPLATES_DIR.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template.name
        assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", text), template.name
