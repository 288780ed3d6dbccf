"""A write that waits out the database's busy timeout behind another writer is answered 503
with Retry-After (nothing stored: the same request may be sent again), never 500."""

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from app.config import Settings
from app.db import session as db_session
from app.main import create_app
from app.services import projects
from tests.conftest import ADMIN_PASSWORD, _empty_tables, admin_project, token_headers

pytestmark = pytest.mark.db


def _quick_pragmas(dbapi_connection: Any, record: Any) -> None:
    """The app's SQLite pragmas, with a busy timeout of 0.2 s instead of 10 s."""
    _pragmas(dbapi_connection, record)
    dbapi_connection.execute("PRAGMA busy_timeout=200")


_pragmas = db_session._sqlite_pragmas


@pytest.fixture
def quick_client(
    db_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    if not settings.database_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock: PostgreSQL locks rows, not the database")
    monkeypatch.setattr(db_session, "_sqlite_pragmas", _quick_pragmas)
    with TestClient(create_app(settings)) as client:
        yield client
    _empty_tables(db_engine)


def test_a_write_held_up_past_the_busy_timeout_is_a_503_to_try_again(
    quick_client: TestClient, settings: Settings
) -> None:
    headers, _ = admin_project(quick_client)
    path = settings.database_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds SQLite's write lock
    try:
        response = quick_client.post("/api/v1/projects", json={"name": "Q"}, headers=headers)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "1"
    assert response.json()["code"] == "database_busy"
    names = [
        p["name"] for p in quick_client.get("/api/v1/projects", headers=headers).json()["items"]
    ]
    assert "Q" not in names  # nothing was stored
    again = quick_client.post("/api/v1/projects", json={"name": "Q"}, headers=headers)
    assert again.status_code == 201  # and the same request goes through once the lock is gone


class _PostgresLockError(Exception):
    sqlstate = "55P03"  # lock_not_available


@pytest.mark.parametrize(
    "original",
    [sqlite3.OperationalError("database is locked"), _PostgresLockError("could not obtain lock")],
)
def test_a_busy_database_error_from_either_database_is_a_503(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, original: Exception
) -> None:
    headers = token_headers(client, "admin", ADMIN_PASSWORD)

    def busy(**_: object) -> None:
        raise OperationalError("INSERT INTO projects ...", {}, original)

    monkeypatch.setattr(projects, "create_project", busy)
    response = client.post("/api/v1/projects", json={"name": "R"}, headers=headers)
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert "try again" in response.json()["detail"]


def test_another_database_error_is_still_an_internal_error(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = token_headers(client, "admin", ADMIN_PASSWORD)

    def broken(**_: object) -> None:
        raise OperationalError(
            "INSERT INTO projects ...", {}, sqlite3.OperationalError("disk I/O error")
        )

    monkeypatch.setattr(projects, "create_project", broken)
    with pytest.raises(OperationalError):  # the test client re-raises what answered 500
        client.post("/api/v1/projects", json={"name": "S"}, headers=headers)
