"""A run's frozen side information is kept once per content in the array store, beside its
dataset's arrays: a run without annotations keeps nothing, runs on unchanged annotations share
one blob, each run still sees the annotations as they were when it was created, and the blobs go
with the dataset."""

import io
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.db.migrate import alembic_config
from app.db.models import Run, StoredArray
from app.store.array_store import ArrayStore
from app.store.run_side_information import KIND_PREFIX, thaw
from tests.api.test_runs import run_to_end, upload_csv

pytestmark = pytest.mark.db


def _blobs(session: Session, dataset_id: int) -> list[StoredArray]:
    session.expire_all()
    rows = session.scalars(select(StoredArray).where(StoredArray.dataset_id == dataset_id))
    return [row for row in rows if row.kind.startswith(KIND_PREFIX)]


def _run(session: Session, run_id: int) -> Run:
    session.expire_all()
    run = session.get(Run, run_id)
    assert run is not None
    return run


def test_runs_share_their_side_information_by_content(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    X = np.random.default_rng(0).normal(size=(60, 2)) + np.repeat([[0, 0], [6, 6]], 30, axis=0)
    dataset_id = upload_csv(client, project_id, admin_headers, X)

    bare = run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=2)
    assert bare["status"] == "succeeded", bare["error"]
    assert _run(session, bare["id"]).side_information_hash is None
    assert _blobs(session, dataset_id) == []  # no annotation: nothing kept

    url = f"/api/v1/datasets/{dataset_id}/annotations"
    body = {"kind": "label", "items": [0, 1], "label": "low"}
    assert client.post(url, json=body, headers=admin_headers).status_code == 201
    first = run_to_end(client, admin_headers, dataset_id, "cec-ib", n_clusters=2)
    second = run_to_end(client, admin_headers, dataset_id, "cec-ib", n_clusters=2)
    assert first["status"] == second["status"] == "succeeded"
    shared = _run(session, first["id"]).side_information_hash
    assert shared is not None and _run(session, second["id"]).side_information_hash == shared
    assert [row.kind for row in _blobs(session, dataset_id)] == [KIND_PREFIX + shared]

    # One more label: a new blob for the next run; the earlier runs still see theirs.
    body = {"kind": "label", "items": [59], "label": "high"}
    assert client.post(url, json=body, headers=admin_headers).status_code == 201
    third = run_to_end(client, admin_headers, dataset_id, "cec-ib", n_clusters=2)
    assert third["status"] == "succeeded", third["error"]
    assert len(_blobs(session, dataset_id)) == 2
    before = thaw(session=session, run=_run(session, first["id"]))
    after = thaw(session=session, run=_run(session, third["id"]))
    assert (before.n_labeled, before.label_names) == (2, ["low"])
    assert (after.n_labeled, sorted(after.label_names)) == (3, ["high", "low"])
    nothing = thaw(session=session, run=_run(session, bare["id"]))
    assert nothing.n_items == 60 and nothing.n_labeled == 0

    response = client.delete(f"/api/v1/datasets/{dataset_id}", headers=admin_headers)
    assert response.status_code == 204
    assert _blobs(session, dataset_id) == []


def test_a_run_kept_with_its_own_copy_is_still_read(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    """A run created before the blobs were shared holds its side information in its row."""
    from app.sideinfo import AnnotationRecord, compile_side_information
    from app.store.side_information_blob import to_npz

    X = np.random.default_rng(1).normal(size=(20, 2))
    dataset_id = upload_csv(client, project_id, admin_headers, X)
    info = compile_side_information(
        n_items=20, revision=3, records=[AnnotationRecord(1, "label", {"items": [4], "label": "a"})]
    )
    run = Run(
        dataset_id=dataset_id,
        algorithm="cec-ib",
        params={"n_clusters": 2},
        annotation_revision=3,
        status="succeeded",
        side_information=to_npz(info),
    )
    session.add(run)
    session.commit()
    back = thaw(session=session, run=run)
    assert back.n_labeled == 1 and back.labels[4] == 0 and back.label_names == ["a"]


def test_going_back_a_revision_puts_each_runs_copy_in_its_row(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    database_url: str,
    store_dir: Path,
    db_engine: Engine,
) -> None:
    """The downgrade loses nothing: every run gets the side information it was created with,
    in the dense form the earlier revision reads; the shared blobs go."""
    X = np.random.default_rng(2).normal(size=(30, 2))
    dataset_id = upload_csv(client, project_id, admin_headers, X)
    bare = run_to_end(client, admin_headers, dataset_id, "cec", n_clusters=2)
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    body = {"kind": "label", "items": [3, 4], "label": "a"}
    assert client.post(url, json=body, headers=admin_headers).status_code == 201
    labeled = run_to_end(client, admin_headers, dataset_id, "cec-ib", n_clusters=2)
    session.close()

    config = alembic_config(database_url, ArrayStore(str(store_dir)))
    try:
        command.downgrade(config, "0008_sign_in_origins")
        with db_engine.connect() as conn:
            rows = dict(
                conn.execute(sa.text("SELECT id, side_information FROM runs")).tuples().all()
            )
            blobs = conn.execute(
                sa.text("SELECT count(*) FROM stored_arrays WHERE kind LIKE 'side-information-%'")
            ).scalar_one()
        assert blobs == 0
        for run_id, labeled_items in ((bare["id"], []), (labeled["id"], [3, 4])):
            with np.load(io.BytesIO(rows[run_id]), allow_pickle=False) as npz:
                assert np.flatnonzero(npz["labels"] >= 0).tolist() == labeled_items
                np.testing.assert_array_equal(npz["chunklets"], np.arange(30))
    finally:
        command.upgrade(config, "head")
