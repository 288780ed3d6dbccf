"""Engine and session factory. SQLite gets WAL, foreign keys and a busy timeout."""

from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # With WAL, NORMAL syncs at checkpoints, not at every commit: still safe against crashes.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _ensure_sqlite_directory(database_url: str) -> None:
    path = make_url(database_url).database
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def make_engine(database_url: str) -> Engine:
    if database_url.startswith("sqlite"):
        _ensure_sqlite_directory(database_url)
        engine = create_engine(
            database_url, connect_args={"check_same_thread": False, "timeout": 30}
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if database_url.startswith("postgresql+psycopg") and find_spec("psycopg") is None:
        raise RuntimeError(
            "a PostgreSQL DATABASE_URL needs the postgres extra: "
            "pip install 'clustering-workbench[postgres]'"
        )
    return create_engine(database_url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A unit of work: commit on success, roll back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


# PostgreSQL's SQLSTATEs for a write that lost to another: lock not available, serialization
# failure, deadlock detected.
_BUSY_SQLSTATES = {"55P03", "40001", "40P01"}


def is_busy(exc: BaseException) -> bool:
    """Whether a database error means another writer held what this one needed (SQLite's
    "database is locked" once its busy timeout ran out; PostgreSQL's lock and serialization
    failures): the request may be tried again as it was."""
    original = getattr(exc, "orig", exc)
    if getattr(original, "sqlstate", None) in _BUSY_SQLSTATES:
        return True
    return "database is locked" in str(original) or "database table is locked" in str(original)
