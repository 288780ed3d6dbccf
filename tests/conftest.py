"""Shared fixtures: a migrated database (SQLite by default, PostgreSQL via TEST_DATABASE_URL),
an app per test, signed-in clients, and small factories.

Each test starts from empty tables plus the bootstrap admin. Tables are emptied after each
test rather than rolled back, because background work (the job runner) opens its own sessions.
"""

import io
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import hypothesis
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.base import Base
from app.db.migrate import upgrade_to_head
from app.db.models import Membership, Role
from app.db.session import make_engine
from app.main import create_app
from app.services import accounts

# Apps and live servers started by tests skip the start-up warm-up of the numba kernels (five
# seconds of fits per app); tests/api/test_kernel_warmup.py turns it on where it is tested.
os.environ["WARM_KERNELS_ON_START"] = "false"
# Apps made from Settings() without an array store write it under a throwaway directory, never
# the checkout's var/arrays (the `settings` fixture gives each test its own).
os.environ.setdefault("ARRAY_STORE", tempfile.mkdtemp(prefix="workbench-test-arrays-"))
# ... and keep the blocks runs read from sources there too, not in the machine's shared /tmp.
os.environ.setdefault("SOURCE_CACHE_DIR", tempfile.mkdtemp(prefix="workbench-test-blocks-"))

# Property tests are reproducible: examples come from a fixed seed per test, and no example
# database (.hypothesis/) makes a run depend on an earlier one. Failures print a reproduce
# blob. HYPOTHESIS_PROFILE=dev draws fresh random examples (still without a database).
hypothesis.settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True
)
hypothesis.settings.register_profile("dev", database=None, deadline=None, print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ADMIN_PASSWORD = "admin-password-for-tests"
PASSWORD = "a-good-password"


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return Settings(database_url=url).database_url
    path: Path = tmp_path_factory.mktemp("db") / "test.db"
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def db_engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    _drop_everything(engine)
    upgrade_to_head(database_url)
    yield engine
    engine.dispose()


def _drop_everything(engine: Engine) -> None:
    Base.metadata.drop_all(engine)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))


def _empty_tables(engine: Engine) -> None:
    with engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        array_store=str(tmp_path / "arrays"),
        admin_username="admin",
        admin_password=ADMIN_PASSWORD,
        load_demo_data=False,
        migrate_on_start=False,
        chunk_rows=64,  # small chunks, so multi-chunk reads are exercised on small data
    )


@pytest.fixture
def client(db_engine: Engine, settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client
    _empty_tables(db_engine)


@pytest.fixture
def store_dir(settings: Settings) -> Path:
    """The directory of the test app's array store."""
    return Path(settings.array_store)


@pytest.fixture
def datasets_dir(store_dir: Path) -> Path:
    """Where the test app's array store keeps a directory per dataset (once it has one)."""
    return store_dir / "datasets"


@pytest.fixture
def session(client: TestClient) -> Iterator[Session]:
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    with factory() as db_session:
        yield db_session


def token_headers(client: TestClient, username: str, password: str) -> dict[str, str]:
    response = client.post("/api/v1/auth/token", data={"username": username, "password": password})
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


@pytest.fixture
def admin_headers(client: TestClient) -> dict[str, str]:
    return token_headers(client, "admin", ADMIN_PASSWORD)


@pytest.fixture
def make_user(client: TestClient, session: Session):
    """Create a user (optionally with a role in a project) and return bearer headers."""

    def make(username: str, project_id: int | None = None, role: Role | None = None):
        user = accounts.create_user(session=session, username=username, password=PASSWORD)
        if project_id is not None and role is not None:
            session.add(Membership(project_id=project_id, user_id=user.id, role=role.value))
        session.commit()
        return token_headers(client, username, PASSWORD)

    return make


@pytest.fixture
def project_id(client: TestClient, admin_headers: dict[str, str]) -> int:
    response = client.post("/api/v1/projects", json={"name": "P"}, headers=admin_headers)
    assert response.status_code == 201
    return int(response.json()["id"])


def row_counts(session: Session) -> dict[str, int]:
    """Rows per table: tests compare these before and after a rejected request."""
    session.expire_all()
    return {
        table.name: session.scalar(select(func.count()).select_from(table)) or 0
        for table in Base.metadata.sorted_tables
    }


def admin_project(client: TestClient, name: str = "P") -> tuple[dict[str, str], int]:
    """Sign in as the admin on `client` (an app of the test's own) and make a project:
    the admin's headers and the project's id."""
    headers = token_headers(client, "admin", ADMIN_PASSWORD)
    response = client.post("/api/v1/projects", json={"name": name}, headers=headers)
    return headers, int(response.json()["id"])


@pytest.fixture
def client_with(db_engine: Engine, settings: Settings) -> Iterator[Callable[..., TestClient]]:
    """Clients of apps whose settings differ from the test's by the given ones, closed
    after the test (and the tables emptied): `client_with(max_upload_bytes=2000)`."""
    with ExitStack() as stack:

        def make(**update: object) -> TestClient:
            app = create_app(settings.model_copy(update=update))
            return stack.enter_context(TestClient(app))

        yield make
    _empty_tables(db_engine)


def post_dataset(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    filename: str,
    content: bytes,
    content_type: str = "application/octet-stream",
    **form: str,
):  # type: ignore[no-untyped-def]
    """POST `content` as a file (and `form` fields) to the project's datasets; the response."""
    return client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": (filename, content, content_type)},
        data=form,
        headers=headers,
    )


def get_page(
    client: TestClient, url: str, headers: dict[str, str], *, limit: int, offset: int
) -> dict[str, Any]:
    """The page of a listing at `url` (items, total, limit, offset)."""
    return client.get(url, params={"limit": limit, "offset": offset}, headers=headers).json()


def upload_npy(
    client: TestClient, project_id: int, headers: dict[str, str], array: np.ndarray
) -> int:
    """Upload `array` as an NPY dataset; its id."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    response = post_dataset(client, project_id, headers, "d.npy", buffer.getvalue())
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def run_tool(args: list[str], cwd: Path, timeout: float) -> str:
    """Run a command-line tool in `cwd`; it must exit 0 (else the test fails showing what it
    printed). What it printed: stdout, then stderr."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def run_concurrently(target: Callable[[], None], n: int) -> None:
    """Call `target` from `n` threads at once and wait for all of them."""
    threads = [threading.Thread(target=target) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def server_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a real server (`python -m app serve`) on its own SQLite file and
    array store under `work`, with the test admin's password, no demo data, and `extra`."""
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{work / 'server.db'}",
        "DATA_DIR": str(work),
        "ARRAY_STORE": str(work / "arrays"),
        "ADMIN_PASSWORD": ADMIN_PASSWORD,
        "LOAD_DEMO_DATA": "false",
        **extra,
    }
