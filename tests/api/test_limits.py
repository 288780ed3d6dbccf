"""Limits under hostile use: active runs per user, login throttling (API and login form), and
revocable access tokens."""

import io
import threading
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from sklearn.datasets import load_iris, make_blobs
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Dataset, LoginThrottle, Role, User
from app.jobs.execute import executors
from app.main import create_app
from app.services import login_throttle
from app.services.errors import InvalidInput, TooManyRequests
from app.services.job_limits import check_active_jobs
from app.services.login_throttle import ThrottlePolicy
from tests.api.test_runs import LONG, start, upload_csv, wait
from tests.conftest import (
    ADMIN_PASSWORD,
    PASSWORD,
    _empty_tables,
    post_dataset,
    row_counts,
    run_concurrently,
    token_headers,
)

pytestmark = pytest.mark.db

TOKEN_URL = "/api/v1/auth/token"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Small limits, so the tests hit them quickly."""
    return settings.model_copy(
        update={
            "max_active_jobs_per_user": 2,
            "inline_workers": 1,
            "login_max_failures": 3,
            "login_max_failures_per_address": 5,
            "login_failure_window_seconds": 60,
            "login_backoff_seconds": 1,
            "login_backoff_max_seconds": 4,
        }
    )


def token_attempt(client: TestClient, username: str, password: str, forwarded_for: str = ""):  # type: ignore[no-untyped-def]
    """Ask for a token (saying X-Forwarded-For: `forwarded_for`, if given)."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
    return client.post(
        TOKEN_URL, data={"username": username, "password": password}, headers=headers
    )


# ---- runs per user ------------------------------------------------------------------------


@pytest.fixture
def big_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    x, _ = make_blobs(n_samples=6000, centers=30, n_features=6, random_state=0)
    return upload_csv(client, project_id, admin_headers, x, name="big")


def test_runs_beyond_the_per_user_limit_get_429_until_one_is_cancelled(
    client: TestClient,
    admin_headers: dict[str, str],
    big_id: int,
    project_id: int,
    session: Session,
    make_user,
) -> None:
    first = start(client, admin_headers, big_id, "cec", **LONG)
    second = start(client, admin_headers, big_id, "cec", **LONG)
    assert (first.status_code, second.status_code) == (202, 202)
    wait(client, admin_headers, first.json()["id"], until={"running"})  # one worker: 2nd queued

    before = row_counts(session)
    refused = start(client, admin_headers, big_id, "cec", **LONG)
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "10"
    body = refused.json()
    assert body["code"] == "too_many_requests"
    assert (
        "2 jobs (runs and image featurizations) queued or running (at most 2 per user)"
        in (body["detail"])
    )
    assert row_counts(session) == before

    # The limit is per user: another editor of the project may still start one.
    other = make_user("other", project_id, Role.editor)
    theirs = start(client, other, big_id, "cec", **LONG)
    assert theirs.status_code == 202, theirs.text

    # Cancelling the queued run frees its slot at once.
    cancel = client.post(f"/api/v1/runs/{second.json()['id']}/cancel", headers=admin_headers)
    assert cancel.json()["status"] == "cancelled"
    third = start(client, admin_headers, big_id, "cec", **LONG)
    assert third.status_code == 202, third.text
    assert start(client, admin_headers, big_id, "cec", **LONG).status_code == 429

    for run in (first, third, theirs):
        client.post(f"/api/v1/runs/{run.json()['id']}/cancel", headers=admin_headers)
    for run in (first, third, theirs):
        assert wait(client, admin_headers, run.json()["id"], timeout=60)["status"] == "cancelled"
    # Stopped runs no longer count.
    again = start(client, admin_headers, big_id, "cec", **LONG)
    assert again.status_code == 202
    client.post(f"/api/v1/runs/{again.json()['id']}/cancel", headers=admin_headers)
    wait(client, admin_headers, again.json()["id"], timeout=60)


def test_a_finished_run_frees_its_slot(
    client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    iris = load_iris()
    dataset_id = upload_csv(client, project_id, admin_headers, iris.data, iris.target, "iris")
    runs = [start(client, admin_headers, dataset_id, "cec", n_clusters=3, n_init=1) for _ in "ab"]
    assert [r.status_code for r in runs] == [202, 202]
    for run in runs:
        assert wait(client, admin_headers, run.json()["id"])["status"] == "succeeded"
    for _ in range(2):
        more = start(client, admin_headers, dataset_id, "cec", n_clusters=3, n_init=1)
        assert more.status_code == 202, more.text
        wait(client, admin_headers, more.json()["id"])


def test_concurrent_requests_cannot_overshoot_the_run_limit(
    client: TestClient, admin_headers: dict[str, str], big_id: int, session: Session
) -> None:
    statuses: list[int] = []
    lock = threading.Lock()

    def post() -> None:
        code = start(client, admin_headers, big_id, "cec", **LONG).status_code
        with lock:
            statuses.append(code)

    run_concurrently(post, 6)
    assert sorted(statuses) == [202, 202, 429, 429, 429, 429]
    listed = client.get(f"/api/v1/datasets/{big_id}/runs", headers=admin_headers).json()
    assert listed["total"] == 2
    for run in listed["items"]:
        client.post(f"/api/v1/runs/{run['id']}/cancel", headers=admin_headers)
    for run in listed["items"]:
        wait(client, admin_headers, run["id"], timeout=60)


def _png(side: int = 32) -> bytes:
    buffer = io.BytesIO()
    pixels = np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _upload_png(client: TestClient, project_id: int, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    return post_dataset(client, project_id, headers, "pic.png", _png(), "image/png")


def _featurizing_for(session: Session, project_id: int, user_id: int, name: str) -> int:
    """A dataset waiting for a featurization the user asked for (never submitted, so it stays
    waiting: no race with the executor)."""
    dataset = Dataset(
        project_id=project_id,
        name=name,
        kind="image",
        status="featurizing",
        n_items=1024,
        n_features=0,
        feature_names=[],
        source_filename="queued.png",
        meta={},
        featurization={
            "recipe": {},
            "job": name,
            "progress": 0.0,
            "version": 0,
            "requested_by": user_id,
        },
        created_by_id=user_id,
    )
    session.add(dataset)
    session.commit()
    return dataset.id


def test_featurizations_count_toward_the_same_limit_as_runs(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    session: Session,
    datasets_dir: Path,
    make_user,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Featurizations queued below stay active until released: the waiting datasets have no
    # image, and a featurization failing at once freed its slot before the 429 was asked for
    # (a race seen in CI).
    release = threading.Event()
    monkeypatch.setattr(executors, "execute_featurization", lambda *_a, **_k: release.wait(60))
    iris = load_iris()
    table = upload_csv(client, project_id, admin_headers, iris.data, iris.target, "iris")
    admin = session.scalars(select(User).where(User.username == "admin")).one()
    queued = [_featurizing_for(session, project_id, admin.id, f"q{i}") for i in range(2)]
    stored = sorted(p.name for p in datasets_dir.iterdir())

    before = row_counts(session)
    upload = _upload_png(client, project_id, admin_headers)
    assert upload.status_code == 429, upload.text
    assert "2 jobs (runs and image featurizations)" in upload.json()["detail"]
    run = start(client, admin_headers, table, "cec", n_clusters=3)
    assert run.status_code == 429, run.text
    assert row_counts(session) == before
    assert sorted(p.name for p in datasets_dir.iterdir()) == stored  # nothing written to the store

    # Another user's budget is their own; what they ask for is theirs.
    other = make_user("other", project_id, Role.editor)
    theirs = _upload_png(client, project_id, other)
    assert theirs.status_code == 201, theirs.text

    # Featurizing one's own queued image again supersedes it: no more work, so allowed.
    again = client.post(f"/api/v1/datasets/{queued[0]}/featurize", json={}, headers=admin_headers)
    assert again.status_code == 202, again.text
    # Someone else's waiting image, asked for again by admin, would be more of admin's work.
    other_id = session.scalars(select(User.id).where(User.username == "other")).one()
    others = _featurizing_for(session, project_id, other_id, "theirs")
    refused = client.post(f"/api/v1/datasets/{others}/featurize", json={}, headers=admin_headers)
    assert refused.status_code == 429, refused.text
    release.set()

    # A featurization that ends frees its slot.
    waiting = session.get(Dataset, queued[1])
    assert waiting is not None
    waiting.status = "failed"
    session.commit()
    freed = start(client, admin_headers, table, "cec", n_clusters=3, n_init=1)
    assert freed.status_code == 202, freed.text
    wait(client, admin_headers, freed.json()["id"])


def test_a_collection_counts_as_one_job_while_its_images_featurize(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 3-image collection under a limit of 2: one job, however many images it queues, so
    # the user's next upload is still taken; the one after that is over the limit.
    release = threading.Event()
    monkeypatch.setattr(executors, "execute_featurization", lambda *_a, **_k: release.wait(60))
    files = [("files", (f"c{i}.png", _png(16 + i), "image/png")) for i in range(3)]
    made = client.post(
        f"/api/v1/projects/{project_id}/collections",
        files=files,
        data={"name": "three"},
        headers=admin_headers,
    )
    assert made.status_code == 201, made.text
    assert [d["status"] for d in made.json()["items"]] == ["featurizing"] * 3
    second = _upload_png(client, project_id, admin_headers)
    assert second.status_code == 201, second.text
    third = _upload_png(client, project_id, admin_headers)
    assert third.status_code == 429, third.text
    assert "you already have 2 jobs" in third.json()["detail"]
    release.set()


def test_an_apply_batch_counts_each_image(session: Session, make_user, project_id: int) -> None:
    make_user("batcher", project_id, Role.editor)
    user = session.scalars(select(User).where(User.username == "batcher")).one()
    what = "applying run 7 to 3 images"
    with pytest.raises(InvalidInput, match="would queue 3 background jobs"):
        check_active_jobs(session, user, 2, adding=3, what=what)
    _featurizing_for(session, project_id, user.id, "queued")
    with pytest.raises(TooManyRequests, match="applying run 7 to 2 images would queue 2 more"):
        check_active_jobs(session, user, 2, adding=2, what="applying run 7 to 2 images")
    check_active_jobs(session, user, 2, adding=1)  # one more fits
    session.rollback()


def test_the_old_setting_name_still_sets_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_ACTIVE_RUNS_PER_USER", "7")
    assert Settings().max_active_jobs_per_user == 7
    monkeypatch.setenv("MAX_ACTIVE_JOBS_PER_USER", "9")
    assert Settings().max_active_jobs_per_user == 9


# ---- login throttling ---------------------------------------------------------------------


def test_token_endpoint_throttles_a_username_with_growing_backoff(
    client: TestClient, session: Session
) -> None:
    for _ in range(3):
        assert token_attempt(client, "admin", "wrong-password").status_code == 401
    before = row_counts(session)
    locked = token_attempt(client, "admin", ADMIN_PASSWORD)  # even the right password
    assert locked.status_code == 429, locked.text
    assert locked.headers["Retry-After"] == "1"
    assert locked.json()["code"] == "too_many_requests"
    assert "too many failed sign-ins" in locked.json()["detail"]
    assert row_counts(session) == before  # no token issued, nothing counted

    time.sleep(1.1)
    # One more failure after the wait doubles it.
    assert token_attempt(client, "admin", "wrong-password").status_code == 401
    doubled = token_attempt(client, "admin", ADMIN_PASSWORD)
    assert doubled.status_code == 429
    assert doubled.headers["Retry-After"] == "2"
    time.sleep(2.1)
    assert token_attempt(client, "admin", ADMIN_PASSWORD).status_code == 200


def test_a_successful_sign_in_resets_the_username_count(client: TestClient, make_user) -> None:
    make_user("bob")
    for _ in range(2):
        assert token_attempt(client, "bob", "wrong-password").status_code == 401
    assert token_attempt(client, "bob", PASSWORD).status_code == 200
    # Without the reset the third failure below would lock "bob" and the fourth get 429.
    for _ in range(2):
        assert token_attempt(client, "bob", "wrong-password").status_code == 401
    assert token_attempt(client, "bob", PASSWORD).status_code == 200


def test_one_address_spraying_usernames_is_throttled_others_are_not(
    client: TestClient,
) -> None:
    for i in range(5):  # one failure each for five usernames: no username reaches 3
        assert token_attempt(client, f"user{i}", "guess").status_code == 401
    locked = token_attempt(client, "admin", ADMIN_PASSWORD)
    assert locked.status_code == 429
    assert int(locked.headers["Retry-After"]) >= 1

    elsewhere = TestClient(client.app, client=("10.1.2.3", 50000))
    assert token_attempt(elsewhere, "admin", ADMIN_PASSWORD).status_code == 200


def test_nobody_can_lock_an_account_from_elsewhere(client: TestClient, make_user) -> None:
    """The attack the per-username lock allowed: wrong passwords for a known account (admin
    included) from one address. That address is throttled for that account; the owner, from an
    address that has not failed, signs in; the attacker's other accounts are untouched."""
    make_user("bob")
    attacker = TestClient(client.app, client=("203.0.113.9", 40000))
    owner = TestClient(client.app, client=("198.51.100.7", 40000))
    for _ in range(3):
        assert token_attempt(attacker, "admin", "guess").status_code == 401
    assert token_attempt(attacker, "admin", ADMIN_PASSWORD).status_code == 429
    assert token_attempt(owner, "admin", ADMIN_PASSWORD).status_code == 200
    assert token_attempt(owner, "admin", "typo").status_code == 401  # counted, not locked
    assert token_attempt(attacker, "bob", PASSWORD).status_code == 200

    # Keeping the pair locked (one request per lock period) still locks nobody else out.
    time.sleep(1.1)
    assert token_attempt(attacker, "admin", "guess").status_code == 401
    assert token_attempt(attacker, "admin", ADMIN_PASSWORD).status_code == 429
    assert token_attempt(owner, "admin", ADMIN_PASSWORD).status_code == 200


def test_the_address_budget_is_its_own(client: TestClient, make_user) -> None:
    """Failures spread over accounts count against the address (5 here), below any pair's
    limit (3): then every account from that address waits, and other addresses do not."""
    make_user("bob")
    sprayer = TestClient(client.app, client=("203.0.113.10", 40000))
    for name in ("u1", "u2", "u3", "u4"):
        assert token_attempt(sprayer, name, "guess").status_code == 401
    assert token_attempt(sprayer, "bob", PASSWORD).status_code == 200  # 4 of 5: not yet
    assert token_attempt(sprayer, "u5", "guess").status_code == 401
    assert token_attempt(sprayer, "bob", PASSWORD).status_code == 429
    other = TestClient(client.app, client=("203.0.113.11", 40000))
    assert token_attempt(other, "bob", PASSWORD).status_code == 200


def test_forwarded_addresses_are_ignored_unless_the_proxy_is_trusted(
    client: TestClient,
) -> None:
    """A local client rotating X-Forwarded-For is one address (uvicorn would believe it from
    127.0.0.1; the app is served with that off, and trusts TRUSTED_PROXIES only)."""
    local = TestClient(client.app, client=("127.0.0.1", 40000))
    for i in range(3):
        response = token_attempt(local, "admin", "guess", f"192.0.2.{i}")
        assert response.status_code == 401
    forged = token_attempt(local, "admin", ADMIN_PASSWORD, "192.0.2.200")
    assert forged.status_code == 429, forged.text


def test_a_trusted_proxy_names_the_client(settings: Settings, db_engine: Engine) -> None:
    """With TRUSTED_PROXIES, the address is the proxy's X-Forwarded-For (its right-most entry
    not itself a trusted proxy), and only from the proxies named."""
    app = create_app(settings.model_copy(update={"trusted_proxies": "127.0.0.1, 10.0.0.0/8"}))
    try:
        with TestClient(app, client=("127.0.0.1", 40000)) as proxy:
            for _ in range(3):
                # The client could prepend anything; the proxy appends what it saw.
                response = token_attempt(proxy, "admin", "guess", "1.2.3.4, 192.0.2.50, 10.1.1.1")
                assert response.status_code == 401
            blocked = token_attempt(proxy, "admin", ADMIN_PASSWORD, "192.0.2.50")
            assert blocked.status_code == 429  # 192.0.2.50's pair, whatever it prepended
            other = token_attempt(proxy, "admin", ADMIN_PASSWORD, "192.0.2.51")
            assert other.status_code == 200, other.text
            untrusted = TestClient(app, client=("203.0.113.5", 40000))
            for _ in range(3):
                response = token_attempt(untrusted, "admin", "guess", "192.0.2.60")
                assert response.status_code == 401
            # Counted against 203.0.113.5 itself, not the address it claimed.
            claimed = TestClient(app, client=("127.0.0.1", 40001))
            response = token_attempt(claimed, "admin", ADMIN_PASSWORD, "192.0.2.60")
            assert response.status_code == 200, response.text
            assert token_attempt(untrusted, "admin", ADMIN_PASSWORD).status_code == 429
    finally:
        _empty_tables(db_engine)


def test_the_login_form_is_throttled_too(client: TestClient, session: Session) -> None:
    for _ in range(3):
        page = client.post("/login", data={"username": "admin", "password": "nope"})
        assert page.status_code == 200
        assert "incorrect username or password" in page.text
    before = row_counts(session)
    locked = client.post(
        "/login",
        data={"username": "admin", "password": ADMIN_PASSWORD},
        follow_redirects=False,
    )
    assert locked.status_code == 429
    assert locked.headers["Retry-After"] == "1"
    assert "too many failed sign-ins" in locked.text
    assert "workbench_session" not in client.cookies
    assert row_counts(session) == before
    # The two entrances share the count.
    assert token_attempt(client, "admin", ADMIN_PASSWORD).status_code == 429


def test_failures_from_concurrent_threads_all_count(client: TestClient, settings: Settings) -> None:
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    policy = ThrottlePolicy.from_settings(settings)
    errors: list[BaseException] = []

    def fail() -> None:
        try:
            with factory() as session:
                login_throttle.record_failure(
                    session=session, policy=policy, username="target", address=None
                )
                session.commit()
        except BaseException as exc:
            errors.append(exc)

    run_concurrently(fail, 12)
    assert errors == []
    with factory() as session:
        row = session.scalars(select(LoginThrottle)).one()
        assert row.failures == 12
        assert row.locked_until is not None
        with pytest.raises(TooManyRequests):
            login_throttle.check(session=session, policy=policy, username="target", address=None)


def test_the_backoff_doubles_up_to_its_cap() -> None:
    policy = ThrottlePolicy(3, 20, timedelta(minutes=15), timedelta(seconds=30), timedelta(hours=1))
    waits = [policy.lockout(n, 3) for n in range(1, 12)]
    seconds = [w.total_seconds() if w else None for w in waits]
    assert seconds == [None, None, 30, 60, 120, 240, 480, 960, 1920, 3600, 3600]


# ---- revocable access tokens --------------------------------------------------------------


def test_logout_revokes_the_access_token(client: TestClient, session: Session) -> None:
    headers = token_headers(client, "admin", ADMIN_PASSWORD)
    other = token_headers(client, "admin", ADMIN_PASSWORD)
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    response = client.post("/api/v1/auth/logout", headers=headers)
    assert response.status_code == 204
    after = client.get("/api/v1/auth/me", headers=headers)
    assert after.status_code == 401
    assert after.json()["code"] == "not_authenticated"
    assert client.post("/api/v1/auth/logout", headers=headers).status_code == 401
    # Only the token used was revoked.
    assert client.get("/api/v1/auth/me", headers=other).status_code == 200


def test_logout_with_the_cookie_revokes_the_session(client: TestClient) -> None:
    client.post("/login", data={"username": "admin", "password": ADMIN_PASSWORD})
    cookie = client.cookies.get("workbench_session")
    assert cookie and client.get("/api/v1/auth/me").status_code == 200
    response = client.post("/api/v1/auth/logout", headers={"Origin": "http://testserver"})
    assert response.status_code == 204
    assert "Max-Age=0" in response.headers["set-cookie"]  # the browser forgets it
    client.cookies.clear()
    client.cookies.set("workbench_session", cookie)  # a copy replayed
    assert client.get("/api/v1/auth/me").status_code == 401
