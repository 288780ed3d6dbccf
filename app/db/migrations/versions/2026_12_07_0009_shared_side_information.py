"""shared side information: a run names its frozen side information by the hash of a blob kept
once per content in the array store, instead of holding a copy in its row

Runs created before keep their copy in `runs.side_information` and are read from it. Going
back, every run named by a hash gets its copy in the row again, in the form that revision reads
(one label and one chunklet id per item).

Created 2026-12-07.
"""

import io
import json

import numpy as np
import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import KEEP_IDS, array_store, check_foreign_keys, foreign_keys_off
from app.sideinfo import SideInformation

revision: str = "0009_shared_side_information"
down_revision: str | None = "0008_sign_in_origins"

_DENSE = (
    "labels",
    "must_link",
    "must_link_confidence",
    "cannot_link",
    "cannot_link_confidence",
    "chunklets",
)


def upgrade() -> None:
    foreign_keys_off(op.get_bind())  # a rebuild of `runs` must not cascade to its results
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.add_column(sa.Column("side_information_hash", sa.String(32), nullable=True))
    check_foreign_keys(op.get_bind())


def downgrade() -> None:
    bind = op.get_bind()
    foreign_keys_off(bind)  # dropping a column rebuilds `runs` on SQLite
    _copies_back_into_rows(bind)
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.drop_column("side_information_hash")
    check_foreign_keys(bind)


def _copies_back_into_rows(bind: sa.Connection) -> None:
    from app.store.side_information_blob import empty, from_npz

    runs = bind.execute(
        sa.text(
            "SELECT r.id, r.dataset_id, r.annotation_revision, r.side_information_hash, "
            "d.n_items FROM runs r JOIN datasets d ON d.id = r.dataset_id "
            "WHERE r.side_information IS NULL AND r.source_run_id IS NULL"
        )
    ).all()
    if not runs:
        return
    store = None
    for run in runs:
        if run.side_information_hash is None:
            info = empty(int(run.n_items), int(run.annotation_revision))
        else:
            store = store or array_store(op.get_context().config)
            key = bind.execute(
                sa.text("SELECT key FROM stored_arrays WHERE dataset_id = :d AND kind = :k"),
                {"d": run.dataset_id, "k": f"side-information-{run.side_information_hash}"},
            ).scalar_one()
            info = from_npz(store.read_bytes(key))
        bind.execute(
            sa.text("UPDATE runs SET side_information = :blob WHERE id = :id"),
            {"blob": _dense_npz(info), "id": run.id},
        )
    blobs = sa.text("SELECT key FROM stored_arrays WHERE kind LIKE 'side-information-%'")
    for key in bind.execute(blobs).scalars().all():
        (store or array_store(op.get_context().config)).delete(key)
    bind.execute(sa.text("DELETE FROM stored_arrays WHERE kind LIKE 'side-information-%'"))


def _dense_npz(info: SideInformation) -> bytes:
    header = {
        "n_items": info.n_items,
        "revision": info.revision,
        "label_names": info.label_names,
        "boundary_labels": info.boundary_labels,
        "boundary_annotation_id": info.boundary_annotation_id,
        "notes": info.notes,
        "conflicts": [c.as_dict() for c in info.conflicts],
    }
    arrays = {name: getattr(info, name) for name in _DENSE if name != "chunklets"}
    chunklets = info.components()
    # The earlier revision kept one id per item.
    arrays["chunklets"] = chunklets if chunklets.size else np.arange(info.n_items, dtype=np.int64)
    if info.side_scores is not None:
        arrays["side_scores"] = info.side_scores
    buffer = io.BytesIO()
    np.savez_compressed(buffer, header=np.array(json.dumps(header)), **arrays)
    return buffer.getvalue()
