"""run labels in the array store: `run_results.labels` moves to the store, `memberships` (never
written) goes

Each finished run's labels become an int32 array under runs/<run id>-<token>/ with a
`stored_arrays` row; downgrade copies them back into `run_results.labels` and removes them
from the store once copied.

Created 2026-11-28.
"""

import numpy as np
import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import ArrayStoreForMigrations, array_store

revision: str = "0007_run_labels_in_store"
down_revision: str | None = "0006_array_store"

_CHUNK_ROWS = 1 << 20  # as app/store/run_arrays.py


def _store() -> ArrayStoreForMigrations:
    return array_store(op.get_context().config)


def upgrade() -> None:
    bind = op.get_bind()
    stored = sa.table(
        "stored_arrays",
        *(sa.column(c) for c in ("run_id", "kind", "key", "dtype", "chunk_rows")),
        sa.column("shape", sa.JSON()),
        sa.column("content_hash"),
        sa.column("nbytes"),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    run_ids = list(
        bind.execute(sa.text("SELECT run_id FROM run_results ORDER BY run_id")).scalars()
    )
    store = _store() if run_ids else None  # an empty database needs no store
    for run_id in run_ids:  # one run's labels in memory at a time
        assert store is not None
        data = bind.execute(
            sa.text("SELECT labels FROM run_results WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        labels = np.frombuffer(data, dtype="<i4")
        info = store.write(
            f"{store.new_prefix('runs', run_id)}/labels.migrated", labels, chunk_rows=_CHUNK_ROWS
        )
        bind.execute(
            stored.insert().values(
                run_id=run_id,
                kind="labels",
                key=info.key,
                shape=list(info.shape),
                dtype=info.dtype,
                chunk_rows=info.chunk_rows,
                content_hash=info.content_hash,
                nbytes=info.nbytes,
                created_at=sa.func.current_timestamp(),
            )
        )
    with op.batch_alter_table("run_results") as batch:
        batch.drop_column("memberships")
        batch.drop_column("labels")


def downgrade() -> None:
    bind = op.get_bind()
    with op.batch_alter_table("run_results") as batch:
        batch.add_column(sa.Column("labels", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("memberships", sa.LargeBinary(), nullable=True))
    rows = bind.execute(
        sa.text(
            "SELECT run_id, key FROM stored_arrays WHERE run_id IS NOT NULL AND kind = 'labels'"
        )
    ).all()
    store = _store() if rows else None
    for run_id, key in rows:
        assert store is not None
        labels = store.read(key).astype("<i4")
        bind.execute(
            sa.text("UPDATE run_results SET labels = :b WHERE run_id = :r"),
            {"b": labels.tobytes(), "r": run_id},
        )
    bind.execute(sa.text("UPDATE run_results SET labels = :b WHERE labels IS NULL"), {"b": b""})
    with op.batch_alter_table("run_results") as batch:
        batch.alter_column("labels", existing_type=sa.LargeBinary(), nullable=False)
    bind.execute(sa.text("DELETE FROM stored_arrays WHERE run_id IS NOT NULL"))
    for _run_id, key in rows:
        assert store is not None
        store.delete(key.rsplit("/", 1)[0])
