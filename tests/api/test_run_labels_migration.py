"""Revision 0007 with real data: run labels written the old way (int32 little-endian bytes in
`run_results.labels`) read back identical from the array store after the upgrade, and are the
same bytes in `run_results.labels` again after the downgrade."""

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import Engine, inspect, select

from app.db.migrate import alembic_config
from app.db.models import StoredArray
from app.db.session import make_session_factory
from app.store.array_store import ArrayStore
from app.store.run_arrays import read_labels
from app.store.transactions import bind_store
from tests.conftest import _empty_tables

pytestmark = pytest.mark.db

BEFORE = "0006_array_store"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)

_users = sa.table(
    "users",
    sa.column("id", sa.Integer),
    *(sa.column(c) for c in ("username", "password_hash", "is_admin", "is_active", "created_at")),
)
_projects = sa.table(
    "projects",
    sa.column("id", sa.Integer),
    *(sa.column(c) for c in ("name", "description", "created_by_id", "created_at")),
)
_datasets = sa.table(
    "datasets",
    sa.column("id", sa.Integer),
    *(sa.column(c) for c in ("project_id", "name", "kind", "status", "n_items", "n_features")),
    *(sa.column(c) for c in ("dtype", "source_filename", "revision", "created_by_id")),
    *(sa.column(c, sa.JSON) for c in ("feature_names", "meta")),
    sa.column("created_at"),
)
_runs = sa.table(
    "runs",
    sa.column("id", sa.Integer),
    *(sa.column(c) for c in ("dataset_id", "algorithm", "annotation_revision", "status")),
    *(sa.column(c) for c in ("cancel_requested", "engine_version", "error", "created_by_id")),
    *(sa.column(c) for c in ("created_at", "started_at", "finished_at")),
    sa.column("params", sa.JSON),
)
_results = sa.table(
    "run_results",
    sa.column("run_id", sa.Integer),
    sa.column("labels", sa.LargeBinary),
    *(sa.column(c, sa.JSON) for c in ("cluster_params", "cost_history", "metrics")),
    sa.column("created_at"),
)


def _blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _insert(conn: sa.Connection, table: sa.TableClause, **values: Any) -> int:
    return int(conn.execute(table.insert().values(**values).returning(table.c.id)).scalar_one())


def _write_old_data(engine: Engine) -> tuple[dict[int, np.ndarray], int]:
    """Two finished runs with their labels in `run_results` as revision 0006 stored them, and
    a failed run without a result: {run id: labels}, the failed run's id."""
    rng = np.random.default_rng(7)
    small = np.array([0, 1, 2, -1, 3, 2**31 - 1, -(2**31)], dtype=np.int32)
    large = rng.integers(-1, 40, size=70_000).astype(np.int32)
    with engine.begin() as conn:
        user = _insert(
            conn,
            _users,
            username="old-owner",
            password_hash="x",
            is_admin=False,
            is_active=True,
            created_at=NOW,
        )
        project = _insert(
            conn, _projects, name="Old", description="", created_by_id=user, created_at=NOW
        )
        dataset = _insert(
            conn,
            _datasets,
            project_id=project,
            name="d",
            kind="table",
            status="ready",
            n_items=70_000,
            n_features=2,
            feature_names=["x0", "x1"],
            dtype="float64",
            source_filename="d.csv",
            meta={},
            revision=0,
            created_by_id=user,
            created_at=NOW,
        )

        def run(status: str, labels: np.ndarray | None) -> int:
            run_id = _insert(
                conn,
                _runs,
                dataset_id=dataset,
                algorithm="cec",
                params={},
                annotation_revision=0,
                status=status,
                cancel_requested=False,
                engine_version="old",
                error=None if labels is not None else "it failed",
                created_by_id=user,
                created_at=NOW,
                started_at=NOW,
                finished_at=NOW,
            )
            if labels is not None:
                conn.execute(
                    _results.insert().values(
                        run_id=run_id,
                        labels=labels.astype("<i4").tobytes(),
                        cluster_params={},
                        cost_history=[],
                        metrics={},
                        created_at=NOW,
                    )
                )
            return run_id

        labels = {run("succeeded", small): small, run("succeeded", large): large}
        failed = run("failed", None)
    return labels, failed


def _check_store(
    engine: Engine, store: ArrayStore, labels: dict[int, np.ndarray], failed: int
) -> set[str]:
    """Each run's labels read back identical through `app.store.run_arrays`; their prefixes."""
    factory = make_session_factory(engine)
    bind_store(factory, store)
    with factory() as session:
        rows = list(session.scalars(select(StoredArray).where(StoredArray.run_id.is_not(None))))
        assert sorted((row.run_id, row.kind, row.dataset_id) for row in rows) == [
            (run_id, "labels", None) for run_id in sorted(labels)
        ]
        for row in rows:
            assert row.run_id is not None
            expected = labels[row.run_id]
            assert row.prefix.startswith(f"runs/{row.run_id}-")
            assert row.shape == [len(expected)]
            assert row.dtype == "int32"
            assert row.nbytes == 4 * len(expected)
            assert row.content_hash == _blake(expected.astype("<i4").tobytes())
            read = read_labels(session=session, run_id=row.run_id)
            assert read is not None and read.dtype == np.int32
            np.testing.assert_array_equal(read, expected)
        assert read_labels(session=session, run_id=failed) is None
        prefixes = {row.prefix for row in rows}
    assert len(prefixes) == len(labels)  # a directory per run
    assert {f"runs/{name}" for name in store.children("runs")} == prefixes
    return prefixes


def _run_results_columns(engine: Engine) -> dict[str, Any]:
    return {c["name"]: c for c in inspect(engine).get_columns("run_results")}


def _check_run_results(engine: Engine, labels: dict[int, np.ndarray], failed: int) -> None:
    """The downgrade's `run_results.labels` hold the same bytes as before the upgrade."""
    columns = _run_results_columns(engine)
    assert columns["labels"]["nullable"] is False  # as revision 0001 made it
    assert columns["memberships"]["nullable"] is True
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT run_id, labels, memberships FROM run_results ORDER BY run_id")
        ).all()
    assert [row.run_id for row in rows] == sorted(labels)  # the failed run still has none
    assert failed not in {row.run_id for row in rows}
    for row in rows:
        assert bytes(row.labels) == labels[row.run_id].astype("<i4").tobytes(), row.run_id
        assert row.memberships is None


def test_run_labels_move_to_the_store_and_back_with_the_same_bytes(
    db_engine: Engine, database_url: str, tmp_path: Path
) -> None:
    store_dir = tmp_path / "arrays"
    config = alembic_config(database_url, ArrayStore(str(store_dir)))
    _empty_tables(db_engine)  # the downgrade must not copy other tests' labels
    try:
        command.downgrade(config, BEFORE)
        assert {"labels", "memberships"} <= set(_run_results_columns(db_engine))
        labels, failed = _write_old_data(db_engine)

        command.upgrade(config, "head")
        assert not {"labels", "memberships"} & set(_run_results_columns(db_engine))
        store = ArrayStore(store_dir)
        prefixes = _check_store(db_engine, store, labels, failed)
        assert all((store_dir / prefix).is_dir() for prefix in prefixes)

        command.downgrade(config, BEFORE)
        _check_run_results(db_engine, labels, failed)
        with db_engine.connect() as conn:
            left = conn.execute(
                sa.text("SELECT count(*) FROM stored_arrays WHERE run_id IS NOT NULL")
            ).scalar_one()
        assert left == 0
        assert store.children("runs") == {}  # the downgrade removed the copies
        assert not any((store_dir / prefix).exists() for prefix in prefixes)

        command.upgrade(config, "head")  # and up again: the same labels, in new directories
        assert _check_store(db_engine, store, labels, failed).isdisjoint(prefixes)
    finally:
        command.upgrade(config, "head")  # the rest of the suite needs the schema back
        _empty_tables(db_engine)
    assert "labels" not in _run_results_columns(db_engine)
