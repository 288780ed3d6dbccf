"""array store: arrays move from `dataset_chunks` (SQL blobs) to the chunked array store

Each dataset's arrays are copied into Zarr arrays under the store (ARRAY_STORE, default
DATA_DIR/arrays; `upgrade_to_head(..., array_store=...)` names another) with one
`stored_arrays` row each, then `dataset_chunks` is dropped. Downgrade copies them back into
`dataset_chunks` and removes them from the store.

Created 2026-11-28.
"""

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import ArrayStoreForMigrations, array_store

revision: str = "0006_array_store"
down_revision: str | None = "0005_image_runs"

_BLOBS = ("image", "reduction")
_STRINGS = ("item_ids",)
_COPY_ROWS = 65_536


def _store() -> ArrayStoreForMigrations:
    return array_store(op.get_context().config)


def _stored_arrays_table() -> None:
    op.create_table(
        "stored_arrays",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("shape", sa.JSON(), nullable=False),
        sa.Column("dtype", sa.String(length=16), nullable=False),
        sa.Column("chunk_rows", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("nbytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_stored_arrays_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_stored_arrays_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stored_arrays")),
        sa.UniqueConstraint("key", name=op.f("uq_stored_arrays_key")),
    )
    with op.batch_alter_table("stored_arrays") as batch:
        batch.create_index(batch.f("ix_stored_arrays_dataset_id"), ["dataset_id"], unique=False)
        batch.create_index(batch.f("ix_stored_arrays_run_id"), ["run_id"], unique=False)


def _chunks_table() -> None:
    op.create_table(
        "dataset_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("start_row", sa.Integer(), nullable=False),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_dataset_chunks_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_chunks")),
        sa.UniqueConstraint(
            "dataset_id", "kind", "index", name=op.f("uq_dataset_chunks_dataset_id")
        ),
    )
    with op.batch_alter_table("dataset_chunks") as batch:
        batch.create_index(batch.f("ix_dataset_chunks_dataset_id"), ["dataset_id"], unique=False)


def _dtype_of(kind: str, dataset: Any) -> tuple[str, int | None]:
    """How the old table stored an array of this kind: dtype and columns (None: 1-D)."""
    if kind == "features":
        return str(dataset.dtype), int(dataset.n_features)
    if kind.startswith("view-"):
        return "float32", 2
    return "int32", None  # ground_truth, item_of_pixel, pixel_ground_truth


def _old_chunks(bind: sa.Connection, dataset_id: int, kind: str) -> Iterator[bytes]:
    ids = bind.execute(
        sa.text(
            'SELECT id FROM dataset_chunks WHERE dataset_id = :d AND kind = :k ORDER BY "index"'
        ),
        {"d": dataset_id, "k": kind},
    ).scalars()
    for chunk_id in list(ids):  # one chunk's bytes in memory at a time
        yield bind.execute(
            sa.text("SELECT data FROM dataset_chunks WHERE id = :i"), {"i": chunk_id}
        ).scalar_one()


def upgrade() -> None:
    _stored_arrays_table()
    bind = op.get_bind()
    table = sa.table(
        "stored_arrays",
        *(sa.column(c) for c in ("dataset_id", "kind", "key", "dtype", "chunk_rows")),
        sa.column("shape", sa.JSON()),
        sa.column("content_hash"),
        sa.column("nbytes"),
        sa.column("created_at", sa.DateTime()),
    )
    pairs = bind.execute(
        sa.text("SELECT DISTINCT dataset_id, kind FROM dataset_chunks ORDER BY dataset_id, kind")
    ).all()
    datasets = {
        row.id: row
        for row in bind.execute(sa.text("SELECT id, dtype, n_features FROM datasets")).all()
    }
    prefixes: dict[int, str] = {}
    store = _store() if pairs else None  # an empty database needs no store
    for dataset_id, kind in pairs:
        assert store is not None
        prefix = prefixes.setdefault(dataset_id, store.new_prefix("datasets", dataset_id))
        key = f"{prefix}/{kind}.migrated"
        if kind in _BLOBS:
            info = store.write_bytes(key, b"".join(_old_chunks(bind, dataset_id, kind)))
        elif kind in _STRINGS:
            values = (v for data in _old_chunks(bind, dataset_id, kind) for v in json.loads(data))
            info = store.write_strings(key, values, chunk_rows=_COPY_ROWS)
        else:
            dtype, n_columns = _dtype_of(kind, datasets[dataset_id])
            writer = store.row_writer(key, n_columns=n_columns, dtype=dtype, chunk_rows=_COPY_ROWS)
            little = np.dtype(dtype).newbyteorder("<")
            for data in _old_chunks(bind, dataset_id, kind):
                block = np.frombuffer(data, dtype=little)
                writer.append(block.reshape(-1, n_columns) if n_columns else block)
            info = writer.close()
        bind.execute(
            table.insert().values(
                dataset_id=dataset_id,
                kind=kind,
                key=info.key,
                shape=list(info.shape),
                dtype=info.dtype,
                chunk_rows=info.chunk_rows,
                content_hash=info.content_hash,
                nbytes=info.nbytes,
                created_at=sa.func.current_timestamp(),
            )
        )
    with op.batch_alter_table("dataset_chunks") as batch:
        batch.drop_index(batch.f("ix_dataset_chunks_dataset_id"))
    op.drop_table("dataset_chunks")


def downgrade() -> None:
    _chunks_table()
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT dataset_id, kind, key, dtype FROM stored_arrays "
            "WHERE dataset_id IS NOT NULL ORDER BY dataset_id, kind"
        )
    ).all()
    chunks = sa.table(
        "dataset_chunks",
        *(sa.column(c) for c in ("dataset_id", "kind", "index", "start_row", "n_rows", "data")),
    )

    def insert(dataset_id: int, kind: str, index: int, start: int, n: int, data: bytes) -> None:
        bind.execute(
            chunks.insert().values(
                dataset_id=dataset_id, kind=kind, index=index, start_row=start, n_rows=n, data=data
            )
        )

    prefixes = set()
    store = _store() if rows else None
    for dataset_id, kind, key, _dtype in rows:
        assert store is not None
        prefixes.add(key.rsplit("/", 1)[0])
        if kind.startswith("picture_level_"):
            continue  # a Deep Zoom pyramid (added later): made again from the picture on demand
        if kind in _BLOBS:
            insert(dataset_id, kind, 0, 0, 1, store.read_bytes(key))
        elif kind in _STRINGS:
            n = store.shape(f"{key}/offsets")[0] - 1
            for index, start in enumerate(range(0, n, _COPY_ROWS)):
                values = store.read_strings(key, start, min(start + _COPY_ROWS, n))
                insert(dataset_id, kind, index, start, len(values), json.dumps(values).encode())
        else:
            start = 0
            for index, block in enumerate(store.iter_blocks(key)):
                little = block.astype(block.dtype.newbyteorder("<"), copy=False)
                insert(dataset_id, kind, index, start, len(block), little.tobytes())
                start += len(block)
    with op.batch_alter_table("stored_arrays") as batch:
        batch.drop_index(batch.f("ix_stored_arrays_run_id"))
        batch.drop_index(batch.f("ix_stored_arrays_dataset_id"))
    op.drop_table("stored_arrays")
    for prefix in prefixes:  # last: a failed downgrade leaves the store as it was
        assert store is not None
        store.delete(prefix)
