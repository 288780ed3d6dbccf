"""shared side information: a run names its frozen side information by the hash of a blob kept
once per content in the array store, instead of holding a copy in its row

Runs created before keep their copy in `runs.side_information` and are read from it. Going
back, every run named by a hash gets its copy in the row again, in the form that revision reads
(one label and one chunklet id per item). The blob's form is read here with numpy and scipy
alone: a revision must not depend on code that changes after it.

Created 2026-12-07.
"""

import io
import json
from typing import Any

import numpy as np
import sqlalchemy as sa
from alembic import op
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from app.db.migration_tools import KEEP_IDS, array_store, check_foreign_keys, foreign_keys_off

revision: str = "0009_shared_side_information"
down_revision: str | None = "0008_sign_in_origins"

_PAIRS = ("must_link", "must_link_confidence", "cannot_link", "cannot_link_confidence")


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
    runs = bind.execute(
        sa.text(
            "SELECT r.id, r.dataset_id, r.annotation_revision, r.side_information_hash, "
            "d.n_items FROM runs r JOIN datasets d ON d.id = r.dataset_id "
            "WHERE r.side_information IS NULL AND r.source_run_id IS NULL"
        )
    ).all()
    store = None
    for run in runs:
        if run.side_information_hash is None:  # no annotation
            dense = _dense(None, int(run.n_items), int(run.annotation_revision))
        else:
            store = store or array_store(op.get_context().config)
            key = bind.execute(
                sa.text("SELECT key FROM stored_arrays WHERE dataset_id = :d AND kind = :k"),
                {"d": run.dataset_id, "k": f"side-information-{run.side_information_hash}"},
            ).scalar_one()
            dense = _dense(store.read_bytes(key), int(run.n_items), int(run.annotation_revision))
        bind.execute(
            sa.text("UPDATE runs SET side_information = :blob WHERE id = :id"),
            {"blob": dense, "id": run.id},
        )
    blobs = sa.text("SELECT key FROM stored_arrays WHERE kind LIKE 'side-information-%'")
    for key in bind.execute(blobs).scalars().all():
        (store or array_store(op.get_context().config)).delete(key)
    bind.execute(sa.text("DELETE FROM stored_arrays WHERE kind LIKE 'side-information-%'"))


def _dense(blob: bytes | None, n_items: int, annotation_revision: int) -> bytes:
    """The earlier revision's NPZ: one label (-1: none) and one chunklet id per item."""
    labels = np.full(n_items, -1, dtype=np.int32)
    arrays: dict[str, Any] = {
        "must_link": np.empty((0, 2), dtype=np.int64),
        "must_link_confidence": np.empty(0, dtype=np.float64),
        "cannot_link": np.empty((0, 2), dtype=np.int64),
        "cannot_link_confidence": np.empty(0, dtype=np.float64),
    }
    header: dict[str, Any] = {
        "n_items": n_items,
        "revision": annotation_revision,
        "label_names": [],
        "boundary_labels": None,
        "boundary_annotation_id": None,
        "notes": [],
        "conflicts": [],
    }
    if blob is not None:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            header = json.loads(str(npz["header"]))
            labels[npz["labeled_items"]] = npz["labeled_values"]
            arrays = {name: npz[name] for name in _PAIRS}
            if "side_scores" in npz.files:
                arrays["side_scores"] = npz["side_scores"]
    hard = arrays["must_link"][arrays["must_link_confidence"] >= 1.0]
    arrays["chunklets"] = _components(n_items, hard)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, header=np.array(json.dumps(header)), labels=labels, **arrays)
    return buffer.getvalue()


def _components(n_items: int, pairs: np.ndarray) -> np.ndarray:
    if len(pairs) == 0:
        return np.arange(n_items, dtype=np.int64)
    graph = coo_matrix(
        (np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])),
        shape=(n_items, n_items),
    )
    return connected_components(graph, directed=False)[1].astype(np.int64)
