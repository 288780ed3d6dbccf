"""Revision 0006 with real data: arrays written the old way (SQL blobs in `dataset_chunks`)
read back identical from the array store after the upgrade, and are SQL blobs again, with
the same bytes, after the downgrade."""

import json
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import Engine, inspect, select

from app.db.models import StoredArray
from app.store import chunks, pyramids
from app.store.array_store import ArrayStore
from tests.api.old_rows import CHUNKS, VIEWS, OldProject, at_revision, blake, insert, store_session

pytestmark = pytest.mark.db

BEFORE = "0005_image_runs"
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _split(values: Any, sizes: list[int]) -> list[Any]:
    bounds = np.cumsum([0, *sizes])
    assert bounds[-1] == len(values)
    return [values[lo:hi] for lo, hi in pairwise(bounds)]


def _old_blob(conn: sa.Connection, dataset_id: int, kind: str, parts: list[bytes]) -> None:
    """A blob (a picture, a fitted reduction) as the old code stored it, in ``parts``."""
    for index, data in enumerate(parts):
        conn.execute(
            CHUNKS.insert().values(
                dataset_id=dataset_id, kind=kind, index=index, start_row=0, n_rows=1, data=data
            )
        )


def _old_array(
    conn: sa.Connection, dataset_id: int, kind: str, array: Any, sizes: list[int]
) -> None:
    """Row chunks of ``array`` as the old code stored them: raw little-endian bytes."""
    start = 0
    for index, part in enumerate(_split(array, sizes)):
        little = part.astype(part.dtype.newbyteorder("<"))
        conn.execute(
            CHUNKS.insert().values(
                dataset_id=dataset_id,
                kind=kind,
                index=index,
                start_row=start,
                n_rows=len(part),
                data=little.tobytes(),
            )
        )
        start += len(part)


def _old_strings(conn: sa.Connection, dataset_id: int, values: list[str], sizes: list[int]) -> None:
    start = 0
    for index, part in enumerate(_split(values, sizes)):
        conn.execute(
            CHUNKS.insert().values(
                dataset_id=dataset_id,
                kind="item_ids",
                index=index,
                start_row=start,
                n_rows=len(part),
                data=json.dumps(part).encode(),
            )
        )
        start += len(part)


def _write_old_data(engine: Engine) -> dict[str, Any]:
    """Three datasets stored the way revision 0005 stored them; what each array holds."""
    rng = np.random.default_rng(6)
    a_features = rng.normal(size=(12, 3))  # float64, in chunks of 5, 5 and 2 rows
    b_features = rng.normal(size=(7, 2)).astype(np.float32)
    ids = [f"item-{i}" for i in range(9)] + ["", "é ü", "日本🙂"]
    truth = rng.integers(-1, 4, size=12).astype(np.int32)
    coords = rng.normal(size=(12, 2)).astype(np.float32)
    image = rng.integers(0, 256, size=5000, dtype=np.uint8).tobytes()
    reduction = b"PK\x03\x04 a fitted reduction"
    pixels = np.arange(20, dtype=np.int32) // 3
    with engine.begin() as conn:
        project = OldProject(conn, NOW)
        a = project.dataset("a", "table", 12, 3, "float64")
        b = project.dataset("b", "table", 7, 2, "float32")
        c = project.dataset("c", "image", 20, 0, "float64")
        view = insert(
            conn, VIEWS, dataset_id=a, name="PCA", method="pca", params={}, created_at=NOW
        )
        _old_array(conn, a, "features", a_features, [5, 5, 2])
        _old_strings(conn, a, ids, [5, 5, 2])
        _old_array(conn, a, "ground_truth", truth, [5, 5, 2])
        _old_array(conn, a, f"view-{view}", coords, [5, 5, 2])
        _old_array(conn, b, "features", b_features, [4, 3])
        _old_blob(conn, c, "image", [image[:3000], image[3000:]])
        _old_blob(conn, c, "reduction", [reduction])
        _old_array(conn, c, "item_of_pixel", pixels, [20])
    return {
        "ids": (a, b, c),
        "view": f"view-{view}",
        "numeric": {
            (a, "features"): a_features,
            (a, "ground_truth"): truth,
            (a, f"view-{view}"): coords,
            (b, "features"): b_features,
            (c, "item_of_pixel"): pixels,
        },
        "strings": {(a, "item_ids"): ids},
        "blobs": {(c, "image"): image, (c, "reduction"): reduction},
    }


def _check_store(engine: Engine, store: ArrayStore, data: dict[str, Any]) -> set[str]:
    """Every array reads back identical through `app.store.chunks`; the datasets' prefixes."""
    with store_session(engine, store) as session:
        rows = list(session.scalars(select(StoredArray)))
        expected_kinds = {*data["numeric"], *data["strings"], *data["blobs"]}
        assert {(row.dataset_id, row.kind) for row in rows} == expected_kinds
        assert all(row.run_id is None for row in rows)
        for row in rows:  # one directory per dataset, named after it
            assert row.prefix.startswith(f"datasets/{row.dataset_id}-")
        assert len({row.prefix for row in rows}) == len(data["ids"])

        for (dataset_id, kind), array in data["numeric"].items():
            n_columns = array.shape[1] if array.ndim == 2 else None
            read = chunks.read_array(
                session=session,
                dataset_id=dataset_id,
                kind=kind,
                dtype=array.dtype.name,
                n_columns=n_columns,
            )
            assert read.dtype == array.dtype, kind
            np.testing.assert_array_equal(read, array, err_msg=kind)
            np.testing.assert_array_equal(  # a range across the old chunks' boundaries
                chunks.read_array(
                    session=session,
                    dataset_id=dataset_id,
                    kind=kind,
                    dtype=array.dtype.name,
                    n_columns=n_columns,
                    start=3,
                    stop=9,
                ),
                array[3:9],
            )
            meta = chunks.stored(session, dataset_id, kind)
            assert meta is not None
            assert tuple(meta.shape) == array.shape
            assert meta.dtype == array.dtype.name
            assert meta.nbytes == array.nbytes
            assert meta.content_hash == blake(array.astype(array.dtype.newbyteorder("<")).tobytes())
        a = data["ids"][0]
        blocks = list(chunks.iter_array_blocks(session=session, dataset_id=a, kind="features"))
        np.testing.assert_array_equal(np.concatenate(blocks), data["numeric"][(a, "features")])

        for (dataset_id, kind), values in data["strings"].items():
            assert chunks.read_strings(session=session, dataset_id=dataset_id, kind=kind) == values
            got = chunks.read_strings(
                session=session, dataset_id=dataset_id, kind=kind, start=4, stop=11
            )
            assert got == values[4:11]
            meta = chunks.stored(session, dataset_id, kind)
            assert meta is not None and meta.dtype == "utf8" and meta.shape == [len(values)]

        for (dataset_id, kind), blob in data["blobs"].items():
            assert chunks.read_blob(session=session, dataset_id=dataset_id, kind=kind) == blob
            meta = chunks.stored(session, dataset_id, kind)
            assert meta is not None and meta.content_hash == blake(blob)
        return {row.prefix for row in rows}


def _old_rows(engine: Engine) -> dict[tuple[int, str], list[Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                'SELECT dataset_id, kind, "index", start_row, n_rows, data FROM dataset_chunks '
                'ORDER BY dataset_id, kind, "index"'
            )
        ).all()
    found: dict[tuple[int, str], list[Any]] = {}
    for row in rows:
        found.setdefault((row.dataset_id, row.kind), []).append(row)
    return found


def _check_dataset_chunks(engine: Engine, data: dict[str, Any]) -> None:
    """The downgrade's `dataset_chunks` hold the same bytes (in its own chunking)."""
    found = _old_rows(engine)
    assert set(found) == {*data["numeric"], *data["strings"], *data["blobs"]}
    for key, rows in found.items():
        assert [row.index for row in rows] == list(range(len(rows))), key
        if key not in data["blobs"]:  # row chunks: consecutive, covering every row
            starts = [row.start_row for row in rows]
            assert starts == list(np.cumsum([0] + [row.n_rows for row in rows[:-1]])), key
    for key, array in data["numeric"].items():
        rows = found[key]
        assert sum(row.n_rows for row in rows) == len(array)
        little = array.astype(array.dtype.newbyteorder("<"))
        assert b"".join(bytes(row.data) for row in rows) == little.tobytes(), key
    for key, values in data["strings"].items():
        rows = found[key]
        assert sum(row.n_rows for row in rows) == len(values)
        assert [v for row in rows for v in json.loads(bytes(row.data))] == values
    for key, blob in data["blobs"].items():
        assert b"".join(bytes(row.data) for row in found[key]) == blob, key


def _add_a_pyramid(engine: Engine, store: ArrayStore, dataset_id: int) -> None:
    """A Deep Zoom level as the app stores one today (app/store/pyramids.py)."""
    with store_session(engine, store) as session:
        pyramids.write_levels(
            session=session,
            dataset_id=dataset_id,
            levels=[(0, np.zeros((1, 1, 3), dtype=np.uint8))],
        )
        session.commit()


def test_arrays_move_to_the_store_and_back_with_the_same_bytes(
    db_engine: Engine, database_url: str, tmp_path: Path
) -> None:
    store_dir = tmp_path / "arrays"
    with at_revision(db_engine, database_url, store_dir, BEFORE) as config:
        assert "dataset_chunks" in inspect(db_engine).get_table_names()
        assert "stored_arrays" not in inspect(db_engine).get_table_names()
        data = _write_old_data(db_engine)

        command.upgrade(config, "head")
        tables = inspect(db_engine).get_table_names()
        assert "dataset_chunks" not in tables
        assert "stored_arrays" in tables
        store = ArrayStore(store_dir)
        prefixes = _check_store(db_engine, store, data)
        assert {f"datasets/{name}" for name in store.children("datasets")} == prefixes
        _add_a_pyramid(db_engine, store, data["ids"][0])

        command.downgrade(config, BEFORE)  # the pyramid (made again on demand) is not copied
        tables = inspect(db_engine).get_table_names()
        assert "stored_arrays" not in tables
        _check_dataset_chunks(db_engine, data)
        assert store.children("datasets") == {}  # the downgrade removed the copies
        assert not any((store_dir / prefix).exists() for prefix in prefixes)

        command.upgrade(config, "head")  # and up again: the same arrays, in new directories
        assert _check_store(db_engine, store, data).isdisjoint(prefixes)
    assert "dataset_chunks" not in inspect(db_engine).get_table_names()
