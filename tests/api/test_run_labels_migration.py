"""Revision 0007 with real data: run labels written the old way (int32 little-endian bytes in
`run_results.labels`) read back identical from the array store after the upgrade, and are the
same bytes in `run_results.labels` again after the downgrade."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import Engine, inspect, select

from app.db.models import StoredArray
from app.store.array_store import ArrayStore
from app.store.run_arrays import read_labels
from tests.api.old_rows import RESULTS, RUNS, OldProject, at_revision, blake, insert, store_session

pytestmark = pytest.mark.db

BEFORE = "0006_array_store"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _write_old_data(engine: Engine) -> tuple[dict[int, np.ndarray], int]:
    """Two finished runs with their labels in `run_results` as revision 0006 stored them, and
    a failed run without a result: {run id: labels}, the failed run's id."""
    rng = np.random.default_rng(7)
    small = np.array([0, 1, 2, -1, 3, 2**31 - 1, -(2**31)], dtype=np.int32)
    large = rng.integers(-1, 40, size=70_000).astype(np.int32)
    with engine.begin() as conn:
        project = OldProject(conn, NOW)
        dataset = project.dataset("d", "table", 70_000, 2, "float64")

        def run(status: str, labels: np.ndarray | None) -> int:
            run_id = insert(
                conn,
                RUNS,
                dataset_id=dataset,
                algorithm="cec",
                params={},
                annotation_revision=0,
                status=status,
                cancel_requested=False,
                engine_version="old",
                error=None if labels is not None else "it failed",
                created_by_id=project.owner,
                created_at=NOW,
                started_at=NOW,
                finished_at=NOW,
            )
            if labels is not None:
                conn.execute(
                    RESULTS.insert().values(
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
    with store_session(engine, store) as session:
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
            assert row.content_hash == blake(expected.astype("<i4").tobytes())
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
    with at_revision(db_engine, database_url, store_dir, BEFORE) as config:
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
    assert "labels" not in _run_results_columns(db_engine)
