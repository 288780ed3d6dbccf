"""The array store follows the SQL transaction: what a rolled-back transaction wrote is gone,
what it deleted is still there; what a committed one deleted or replaced is gone."""

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Dataset, StoredArray
from app.store import chunks
from app.store.array_store import ArrayStore
from app.store.transactions import store_of
from tests.conftest import admin_project, post_dataset, upload_npy

pytestmark = pytest.mark.db

CHUNK_ROWS = 64  # the settings fixture's chunk_rows


def _datasets_dir(settings: Settings) -> Path:
    return Path(settings.array_store) / "datasets"


def _dataset_dirs(settings: Settings) -> set[str]:
    where = _datasets_dir(settings)
    return {p.name for p in where.iterdir() if p.is_dir()} if where.exists() else set()


def _stored_rows(session: Session, dataset_id: int | None = None) -> list[StoredArray]:
    session.expire_all()
    query = select(StoredArray).order_by(StoredArray.id)
    if dataset_id is not None:
        query = query.where(StoredArray.dataset_id == dataset_id)
    return list(session.scalars(query))


def _prefix(session: Session, dataset_id: int) -> str:
    rows = _stored_rows(session, dataset_id)
    assert rows, f"dataset {dataset_id} has no stored arrays"
    assert len({row.prefix for row in rows}) == 1  # one directory per dataset
    return rows[0].prefix


def _exists(settings: Settings, key: str) -> bool:
    return (Path(settings.array_store) / key).exists()


def _features(session: Session, dataset_id: int, n_columns: int = 3) -> np.ndarray:
    return chunks.read_array(
        session=session,
        dataset_id=dataset_id,
        kind="features",
        dtype="float64",
        n_columns=n_columns,
    )


def _key(session: Session, dataset_id: int) -> str:
    """Where the dataset's features are in the store."""
    return chunks.stored(session, dataset_id, "features").key  # type: ignore[union-attr]


def _write(
    session: Session,
    dataset_id: int,
    array: np.ndarray,
    kind: str = "features",
    chunk_rows: int = CHUNK_ROWS,
) -> None:
    chunks.write_array(
        session=session, dataset_id=dataset_id, kind=kind, array=array, chunk_rows=chunk_rows
    )


def _new_dataset(session: Session, project_id: int) -> Dataset:
    dataset = Dataset(
        project_id=project_id,
        name="by hand",
        kind="table",
        status="ready",
        n_items=5,
        n_features=2,
        feature_names=["a", "b"],
        dtype="float64",
    )
    session.add(dataset)
    session.flush()
    return dataset


TABLE = np.arange(150 * 3, dtype=np.float64).reshape(150, 3) / 7  # three chunks of 64 rows


@pytest.fixture
def dataset_id(client: TestClient, admin_headers: dict[str, str], project_id: int) -> int:
    """TABLE uploaded to the project: its dataset's id."""
    return upload_npy(client, project_id, admin_headers, TABLE)


def test_the_app_session_knows_the_configured_store(session: Session, settings: Settings) -> None:
    store = store_of(session)
    assert isinstance(store, ArrayStore)
    assert Path(store.location) == Path(settings.array_store)


# -- refused uploads ------------------------------------------------------------------------


def _csv_with_nan_at(row: int, rows: int = 200) -> bytes:
    lines = ["id,a,b"] + [f"i{i},{i},{i * 0.5}" for i in range(1, rows + 1)]
    lines[row] = f"i{row},{row},nan"
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("bad_row", [3, 150])  # before the first chunk is full; in the third
def test_a_refused_upload_leaves_no_rows_and_no_directory(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    session: Session,
    settings: Settings,
    bad_row: int,
) -> None:
    csv = _csv_with_nan_at(bad_row)
    response = post_dataset(
        client, project_id, admin_headers, "n.csv", csv, "text/csv", id_column="id"
    )
    assert response.status_code == 422, response.text
    assert "NaN" in response.json()["detail"]
    assert f"row {bad_row}" in response.json()["detail"]
    assert _stored_rows(session) == []
    assert session.scalar(select(func.count()).select_from(Dataset)) == 0
    assert _dataset_dirs(settings) == set()


def test_a_good_upload_after_a_refused_one_has_one_directory(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    session: Session,
    settings: Settings,
) -> None:
    csv = _csv_with_nan_at(150)
    response = post_dataset(client, project_id, admin_headers, "n.csv", csv, "text/csv")
    assert response.status_code == 422
    dataset_id = upload_npy(client, project_id, admin_headers, TABLE)
    prefix = _prefix(session, dataset_id)
    assert _dataset_dirs(settings) == {prefix.split("/")[1]}
    assert prefix.startswith(f"datasets/{dataset_id}-")
    np.testing.assert_array_equal(_features(session, dataset_id), TABLE)


# -- writes that roll back ------------------------------------------------------------------


def test_a_rolled_back_write_for_a_new_dataset_leaves_no_directory(
    project_id: int, session: Session, settings: Settings
) -> None:
    dataset = _new_dataset(session, project_id)
    values = np.ones((5, 2))
    _write(session, dataset.id, values, chunk_rows=2)
    key = _stored_rows(session, dataset.id)[0].key
    assert _exists(settings, key)  # written before the commit...
    np.testing.assert_array_equal(_features(session, dataset.id, 2), values)
    session.rollback()
    assert not _exists(settings, key)  # ...and removed with the transaction
    assert _dataset_dirs(settings) == set()
    assert _stored_rows(session) == []


def test_a_rolled_back_row_writer_leaves_no_directory(
    project_id: int, session: Session, settings: Settings
) -> None:
    dataset = _new_dataset(session, project_id)
    with chunks.row_writer(
        session=session,
        dataset_id=dataset.id,
        kind="features",
        n_columns=2,
        dtype="float64",
        chunk_rows=2,
    ) as writer:
        writer.append(np.zeros((3, 2)))
    assert _dataset_dirs(settings) != set()
    session.rollback()
    assert _dataset_dirs(settings) == set()


def test_a_rolled_back_write_to_an_existing_dataset_keeps_its_other_arrays(
    dataset_id: int, session: Session, settings: Settings
) -> None:
    prefix = _prefix(session, dataset_id)
    before = {row.kind: row.key for row in _stored_rows(session, dataset_id)}
    assert "features" in before
    _write(session, dataset_id, np.zeros((150, 3)))
    _write(session, dataset_id, np.zeros(150, dtype=np.int32), kind="ground_truth")
    after = {row.kind: row.key for row in _stored_rows(session, dataset_id)}
    assert after["features"] != before["features"]
    assert all(key.startswith(f"{prefix}/") for key in after.values())  # the same directory
    session.rollback()
    assert {row.kind: row.key for row in _stored_rows(session, dataset_id)} == before
    assert all(_exists(settings, key) for key in before.values())
    assert not _exists(settings, after["features"])
    assert not _exists(settings, after["ground_truth"])
    np.testing.assert_array_equal(_features(session, dataset_id), TABLE)


# -- deletes: kept on rollback, removed on commit -------------------------------------------


def test_deleted_arrays_stay_readable_after_a_rollback_and_go_after_a_commit(
    dataset_id: int, session: Session, settings: Settings
) -> None:
    key = _key(session, dataset_id)

    chunks.delete_arrays(session=session, dataset_id=dataset_id, kinds=["features"])
    assert chunks.stored(session, dataset_id, "features") is None
    assert _exists(settings, key)  # not before the commit
    session.rollback()
    assert _exists(settings, key)
    np.testing.assert_array_equal(_features(session, dataset_id), TABLE)

    others = [row.key for row in _stored_rows(session, dataset_id) if row.kind != "features"]
    assert others  # the PCA view
    chunks.delete_arrays(session=session, dataset_id=dataset_id, kinds=["features"])
    session.commit()
    assert not _exists(settings, key)
    assert chunks.stored(session, dataset_id, "features") is None
    assert _features(session, dataset_id).shape == (0, 3)
    assert all(_exists(settings, other) for other in others)  # only what was deleted


def test_a_forgotten_dataset_stays_after_a_rollback_and_goes_after_a_commit(
    client: TestClient,
    admin_headers: dict[str, str],
    project_id: int,
    dataset_id: int,
    session: Session,
    settings: Settings,
) -> None:
    kept_id = upload_npy(client, project_id, admin_headers, TABLE[:10])
    prefix, kept_prefix = _prefix(session, dataset_id), _prefix(session, kept_id)

    chunks.forget_datasets(session=session, dataset_ids=[dataset_id])
    session.delete(session.get(Dataset, dataset_id))
    session.flush()
    assert _exists(settings, prefix)
    session.rollback()
    assert _exists(settings, prefix)
    np.testing.assert_array_equal(_features(session, dataset_id), TABLE)

    chunks.forget_datasets(session=session, dataset_ids=[dataset_id])
    session.delete(session.get(Dataset, dataset_id))
    session.commit()
    assert not _exists(settings, prefix)
    assert _stored_rows(session, dataset_id) == []  # the rows went by cascade
    assert _dataset_dirs(settings) == {kept_prefix.split("/")[1]}
    np.testing.assert_array_equal(_features(session, kept_id), TABLE[:10])


def test_deleting_a_dataset_through_the_api_removes_its_directory(
    client: TestClient,
    admin_headers: dict[str, str],
    dataset_id: int,
    session: Session,
    settings: Settings,
) -> None:
    prefix = _prefix(session, dataset_id)
    session.rollback()  # end the read transaction before the API deletes
    response = client.delete(f"/api/v1/datasets/{dataset_id}", headers=admin_headers)
    assert response.status_code == 204, response.text
    assert not _exists(settings, prefix)
    assert _stored_rows(session) == []


# -- replacing ------------------------------------------------------------------------------


def test_replacing_an_array_in_one_transaction_keeps_one_row_and_only_the_new_key(
    dataset_id: int, session: Session, settings: Settings
) -> None:
    original = _key(session, dataset_id)
    first, second = TABLE * 2, TABLE * 3
    keys = []
    for values in (first, second):
        _write(session, dataset_id, values)
        keys.append(_key(session, dataset_id))
    session.commit()
    rows = [row for row in _stored_rows(session, dataset_id) if row.kind == "features"]
    assert [row.key for row in rows] == [keys[1]]
    assert len({original, *keys}) == 3  # every write went to a new key
    assert not _exists(settings, original)
    assert not _exists(settings, keys[0])
    assert _exists(settings, keys[1])
    features = {p.name for p in (Path(settings.array_store) / rows[0].prefix).iterdir()}
    assert {name for name in features if name.startswith("features.")} == {
        keys[1].rsplit("/", 1)[1]
    }
    np.testing.assert_array_equal(_features(session, dataset_id), second)


def test_replacing_an_array_across_transactions_removes_the_old_key_only_on_commit(
    dataset_id: int, session: Session, settings: Settings
) -> None:
    old = _key(session, dataset_id)
    _write(session, dataset_id, -TABLE)
    new = _key(session, dataset_id)
    assert _exists(settings, old) and _exists(settings, new)  # both until the commit
    session.commit()
    assert not _exists(settings, old)
    assert _exists(settings, new)
    assert [r.key for r in _stored_rows(session, dataset_id) if r.kind == "features"] == [new]
    np.testing.assert_array_equal(_features(session, dataset_id), -TABLE)


# -- projects -------------------------------------------------------------------------------


def test_deleting_a_project_removes_every_dataset_directory(
    client: TestClient, project_id: int, session: Session, settings: Settings
) -> None:
    headers, other_id = admin_project(client, "Other")
    kept_id = upload_npy(client, other_id, headers, TABLE[:5])
    ids = [upload_npy(client, project_id, headers, TABLE[:n]) for n in (70, 150)]
    prefixes = [_prefix(session, dataset_id) for dataset_id in ids]
    kept_prefix = _prefix(session, kept_id)
    assert len(_dataset_dirs(settings)) == 3
    session.rollback()

    response = client.delete(f"/api/v1/projects/{project_id}", headers=headers)
    assert response.status_code == 204, response.text

    assert not any(_exists(settings, prefix) for prefix in prefixes)
    assert _dataset_dirs(settings) == {kept_prefix.split("/")[1]}
    assert {row.dataset_id for row in _stored_rows(session)} == {kept_id}
    np.testing.assert_array_equal(_features(session, kept_id), TABLE[:5])
