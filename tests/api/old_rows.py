"""Rows as an old revision's schema held them, for the migration tests with real data
(test_array_store_migration.py, test_run_labels_migration.py): the old tables as plain SQL
sees them, an owner with a project and datasets, the schema taken down to a revision and back
up to head around a test, and sessions that read through the array store."""

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.migrate import alembic_config
from app.db.session import make_session_factory
from app.store.array_store import ArrayStore
from app.store.transactions import bind_store
from tests.conftest import _empty_tables


def _table(
    name: str, plain: str, json: str = "", binary: str = "", key: str | None = "id"
) -> sa.TableClause:
    """A table as plain SQL sees it: `key` an integer, the columns named in `json` JSON, those
    in `binary` bytes, those in `plain` untyped (names separated by spaces)."""
    columns = [sa.column(key, sa.Integer)] if key else []
    columns += [sa.column(c) for c in plain.split()]
    columns += [sa.column(c, sa.JSON) for c in json.split()]
    columns += [sa.column(c, sa.LargeBinary) for c in binary.split()]
    return sa.table(name, *columns)


USERS = _table("users", "username password_hash is_admin is_active created_at")
PROJECTS = _table("projects", "name description created_by_id created_at")
DATASETS = _table(
    "datasets",
    "project_id name kind status n_items n_features dtype source_filename revision"
    " created_by_id created_at",
    json="feature_names meta",
)
VIEWS = _table("views", "dataset_id name method created_at", json="params")
CHUNKS = _table("dataset_chunks", "dataset_id kind index start_row n_rows", binary="data", key=None)
RUNS = _table(
    "runs",
    "dataset_id algorithm annotation_revision status cancel_requested engine_version error"
    " created_by_id created_at started_at finished_at",
    json="params",
)
RESULTS = _table(
    "run_results",
    "created_at",
    json="cluster_params cost_history metrics",
    binary="labels",
    key="run_id",
)


def blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def insert(conn: sa.Connection, table: sa.TableClause, **values: Any) -> int:
    return int(conn.execute(table.insert().values(**values).returning(table.c.id)).scalar_one())


class OldProject:
    """A project (and its owner) written with plain SQL at `now`, to which datasets are added."""

    def __init__(self, conn: sa.Connection, now: datetime) -> None:
        self.conn, self.now = conn, now
        self.owner = insert(
            conn,
            USERS,
            username="old-owner",
            password_hash="x",
            is_admin=False,
            is_active=True,
            created_at=now,
        )
        self.id = insert(
            conn, PROJECTS, name="Old", description="", created_by_id=self.owner, created_at=now
        )

    def dataset(self, name: str, kind: str, n_items: int, n_features: int, dtype: str) -> int:
        """A ready dataset's row (features x0, x1, ... from `name`.csv); its id."""
        return insert(
            self.conn,
            DATASETS,
            project_id=self.id,
            created_by_id=self.owner,
            created_at=self.now,
            name=name,
            source_filename=f"{name}.csv",
            kind=kind,
            status="ready",
            revision=0,
            n_items=n_items,
            n_features=n_features,
            feature_names=[f"x{i}" for i in range(n_features)],
            dtype=dtype,
            meta={},
        )


@contextmanager
def at_revision(
    db_engine: Engine, database_url: str, store_dir: Path, revision: str
) -> Iterator[Config]:
    """The schema downgraded to `revision`, on empty tables (a downgrade must copy none of
    other tests' rows), with the array store in `store_dir`; its Alembic config. Afterwards
    the schema is at head again (the rest of the suite needs it) and the tables are empty."""
    config = alembic_config(database_url, ArrayStore(str(store_dir)))
    _empty_tables(db_engine)
    try:
        command.downgrade(config, revision)
        yield config
    finally:
        command.upgrade(config, "head")
        _empty_tables(db_engine)


@contextmanager
def store_session(engine: Engine, store: ArrayStore) -> Iterator[Session]:
    """A session of the app's kind on `engine`, its array store `store`."""
    factory = make_session_factory(engine)
    bind_store(factory, store)
    with factory() as session:
        yield session
