"""A dataset's (or run's) arrays by kind: bytes in the array store, a `StoredArray` row each.

Every write goes to a new key, so the array it replaces survives until the transaction that
replaced it commits (`transactions.py`); a read takes only the chunks it needs."""

import io
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from app.db.models.runs import Run
from app.db.models.stored_arrays import StoredArray
from app.store.stored import BYTES_CHUNK, StoredInfo
from app.store.transactions import NEW_PREFIXES, doom, store_of, written
from app.store.writers import RowWriter, StringWriter, TiledWriter


def _owned_by(dataset_id: int | None, run_id: int | None) -> ColumnElement[bool]:
    """A run's arrays when ``run_id`` is given, else the dataset's own."""
    return StoredArray.dataset_id == dataset_id if run_id is None else StoredArray.run_id == run_id


def _rows(session: Session, dataset_id: int | None, run_id: int | None) -> list[StoredArray]:
    return list(session.scalars(select(StoredArray).where(_owned_by(dataset_id, run_id))))


def _row(
    session: Session, dataset_id: int | None, kind: str, run_id: int | None = None
) -> StoredArray | None:
    pending = _pending_row(session, dataset_id, kind, run_id)
    if pending is not None:
        return pending
    return session.scalars(
        select(StoredArray)
        .where(_owned_by(dataset_id, run_id), StoredArray.kind == kind)
        .order_by(StoredArray.id.desc())
    ).first()


def _prefix(session: Session, dataset_id: int | None, run_id: int | None) -> str:
    """The owner's directory: the one its arrays are in, or a new one for this transaction."""
    existing = _rows(session, dataset_id, run_id)
    if existing:
        return existing[0].prefix
    new: dict[tuple[int | None, int | None], str] = session.info.setdefault(NEW_PREFIXES, {})
    owner = (dataset_id, run_id)
    if owner not in new:
        kind, owner_id = ("datasets", dataset_id) if run_id is None else ("runs", run_id)
        new[owner] = store_of(session).new_prefix(kind, int(owner_id or 0))
        written(session, new[owner])
    return new[owner]


def _key(session: Session, dataset_id: int | None, kind: str, run_id: int | None) -> str:
    return f"{_prefix(session, dataset_id, run_id)}/{kind}.{secrets.token_hex(3)}"


def _record(
    session: Session, dataset_id: int | None, run_id: int | None, kind: str, info: StoredInfo
) -> None:
    """The row for a written array, replacing (after commit) the kind's earlier array; kept
    until a ``deferred_records`` block ends."""
    deferred = session.info.get(_DEFERRED)
    if deferred is not None:
        deferred.append((dataset_id, run_id, kind, info))
        return
    for old in session.scalars(
        select(StoredArray).where(_owned_by(dataset_id, run_id), StoredArray.kind == kind)
    ):
        doom(session, old.key)
        session.delete(old)
    session.add(stored_array_row(dataset_id, run_id, kind, info))
    session.flush()


_DEFERRED = "array_store_deferred_records"


def _pending_row(
    session: Session, dataset_id: int | None, kind: str, run_id: int | None
) -> StoredArray | None:
    """An array written inside ``deferred_records`` and not yet recorded, as the (unsaved) row
    it will get: what the same block writes, it can read back."""
    for owner_dataset, owner_run, pending_kind, info in reversed(session.info.get(_DEFERRED, [])):
        if (owner_dataset, owner_run, pending_kind) == (dataset_id, run_id, kind):
            return stored_array_row(dataset_id, run_id, kind, info)
    return None


def stored_array_row(
    dataset_id: int | None, run_id: int | None, kind: str, info: StoredInfo
) -> StoredArray:
    """The (unsaved) row that records a written array under its owner (none: a staged file)."""
    return StoredArray(
        dataset_id=dataset_id,
        run_id=run_id,
        kind=kind,
        key=info.key,
        shape=list(info.shape),
        dtype=info.dtype,
        chunk_rows=info.chunk_rows,
        content_hash=info.content_hash,
        nbytes=info.nbytes,
    )


@contextmanager
def deferred_records(session: Session) -> Iterator[None]:
    """Arrays written inside are recorded (their SQL rows added) only when it ends: a long job
    (a slide's featurization) writes gigabytes to the store without holding the database's
    write lock (SQLite takes it at the first insert) while others need it."""
    session.info[_DEFERRED] = []
    try:
        yield
        pending = session.info.pop(_DEFERRED)
    except BaseException:
        session.info.pop(_DEFERRED, None)
        raise
    for dataset_id, run_id, kind, info in pending:
        _record(session, dataset_id, run_id, kind, info)


class Staging:
    """Arrays written before their dataset has a row: a slide's upload writes gigabytes for
    minutes, and inserting the row first would hold the database's write lock (SQLite takes it
    at the first insert) all that time. They go to a directory of their own, removed if the
    transaction rolls back (or swept at start-up after a crash), and are recorded under the
    dataset by ``record`` once it exists."""

    def __init__(self, session: Session):
        self.session = session
        self.store = store_of(session)
        self.prefix = self.store.new_prefix("datasets", 0)
        written(session, self.prefix)
        self._records: list[tuple[str, StoredInfo]] = []

    def _key(self, kind: str) -> str:
        return f"{self.prefix}/{kind}.{secrets.token_hex(3)}"

    @contextmanager
    def tiled_writer(
        self, kind: str, *, shape: tuple[int, ...], dtype: str | np.dtype, tile: int
    ) -> Iterator[TiledWriter]:
        writer = self.store.tiled_writer(self._key(kind), shape=shape, dtype=dtype, tile=tile)
        yield writer
        self._records.append((kind, writer.close()))

    def write_blob_stream(self, kind: str, stream: BinaryIO) -> None:
        """A file's bytes from where ``stream`` stands to its end, a chunk at a time, stored
        as ``write_blob`` stores bytes."""
        start = stream.tell()
        size = stream.seek(0, io.SEEK_END) - start
        stream.seek(start)
        writer = self.store.row_writer(  # a small file in a chunk its size (`ArrayStore.write`)
            self._key(kind),
            n_columns=None,
            dtype="uint8",
            chunk_rows=max(1, min(BYTES_CHUNK, size)),
        )
        with _aborted_on_error(writer):
            while block := stream.read(BYTES_CHUNK):
                writer.append(np.frombuffer(block, dtype=np.uint8))
        self._records.append((kind, writer.close()))

    def record(self, dataset_id: int) -> None:
        for kind, info in self._records:
            _record(self.session, dataset_id, None, kind, info)
        self.session.flush()


def region_reader(
    *, session: Session, dataset_id: int, kind: str
) -> Callable[[tuple[int, int], tuple[int, int]], NDArray]:
    """Regions (rows, columns) of a tiled array, read without the session (from threads)."""
    row = _row(session, dataset_id, kind)
    if row is None:
        raise FileNotFoundError(f"dataset {dataset_id} has no {kind} array")
    store, key = store_of(session), row.key
    return lambda rows, columns: store.read_region(key, rows, columns)


# -- writing --------------------------------------------------------------------------------


@contextmanager
def row_writer(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    n_columns: int | None,
    dtype: str | np.dtype,
    chunk_rows: int,
    run_id: int | None = None,
) -> Iterator[RowWriter]:
    """Append row blocks in bounded memory (a streamed upload); recorded when the block ends
    without an error. Whatever was written is removed if the transaction rolls back."""
    key = _key(session, dataset_id, kind, run_id)
    written(session, key)
    writer = store_of(session).row_writer(
        key, n_columns=n_columns, dtype=dtype, chunk_rows=chunk_rows
    )
    with _aborted_on_error(writer):
        yield writer
    _record(session, dataset_id, run_id, kind, writer.close())


@contextmanager
def string_writer(
    *, session: Session, dataset_id: int, kind: str, chunk_rows: int
) -> Iterator[StringWriter]:
    """Append batches of strings (item ids of a streamed upload); recorded at the end."""
    key = _key(session, dataset_id, kind, None)
    written(session, key)
    writer = store_of(session).string_writer(key, chunk_rows=chunk_rows)
    with _aborted_on_error(writer):
        yield writer
    _record(session, dataset_id, None, kind, writer.close())


@contextmanager
def _aborted_on_error(writer: RowWriter | StringWriter) -> Iterator[None]:
    """A writer whose block ends in an error (or is dropped unfinished) stops writing before
    the rollback deletes what it wrote: its write in flight would put the array back."""
    try:
        yield
    except BaseException:
        writer.abort()
        raise


def write_array(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    array: np.ndarray,
    chunk_rows: int,
    run_id: int | None = None,
) -> None:
    key = _key(session, dataset_id, kind, run_id)
    written(session, key)
    _record(
        session,
        dataset_id,
        run_id,
        kind,
        store_of(session).write(key, array, chunk_rows=chunk_rows),
    )


def write_tiled(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    image: np.ndarray,
    tile: int,
    run_id: int | None = None,
) -> None:
    """An image-shaped array (rows, columns[, channels]) in square chunks of ``tile``."""
    key = _key(session, dataset_id, kind, run_id)
    written(session, key)
    _record(session, dataset_id, run_id, kind, store_of(session).write_tiled(key, image, tile=tile))


@contextmanager
def tiled_writer(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    shape: tuple[int, ...],
    dtype: str | np.dtype,
    tile: int,
    run_id: int | None = None,
) -> Iterator[TiledWriter]:
    """Fill an image-shaped array band by band (``write_tiled`` for one too large to hold);
    recorded when the block ends without an error, removed if the transaction rolls back."""
    key = _key(session, dataset_id, kind, run_id)
    written(session, key)
    writer = store_of(session).tiled_writer(key, shape=shape, dtype=dtype, tile=tile)
    yield writer
    _record(session, dataset_id, run_id, kind, writer.close())


def read_region(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    rows: tuple[int, int],
    columns: tuple[int, int],
    run_id: int | None = None,
) -> np.ndarray | None:
    """A region of a tiled array, or None when the owner has no array of that kind."""
    row = _row(session, dataset_id, kind, run_id)
    if row is None:
        return None
    return store_of(session).read_region(row.key, rows, columns)


def write_strings(
    *,
    session: Session,
    dataset_id: int,
    kind: str,
    values: Iterable[str],
    chunk_rows: int,
) -> None:
    key = _key(session, dataset_id, kind, None)
    written(session, key)
    info = store_of(session).write_strings(key, values, chunk_rows=chunk_rows)
    _record(session, dataset_id, None, kind, info)


def write_dask_array(*, session: Session, run_id: int, kind: str, array: Any) -> None:
    """A run's 1-D dask array, written by the tasks that compute it (`ArrayStore.write_dask`)."""
    key = _key(session, None, kind, run_id)
    written(session, key)
    _record(session, None, run_id, kind, store_of(session).write_dask(key, array))


def write_blob(
    *, session: Session, dataset_id: int | None, kind: str, data: bytes, run_id: int | None = None
) -> None:
    key = _key(session, dataset_id, kind, run_id)
    written(session, key)
    _record(session, dataset_id, run_id, kind, store_of(session).write_bytes(key, data))


# -- reading --------------------------------------------------------------------------------


def stored(
    session: Session, dataset_id: int | None, kind: str, run_id: int | None = None
) -> StoredArray | None:
    """The metadata of a stored array (shape, dtype, hash), or None."""
    return _row(session, dataset_id, kind, run_id)


def iter_array_blocks(
    *,
    session: Session,
    dataset_id: int,
    kind: str,
    dtype: str | None = None,
    n_columns: int | None = None,
) -> Iterator[NDArray]:
    """Each stored chunk as an array, in row order (nothing if the array is absent)."""
    row = _row(session, dataset_id, kind)
    if row is None:
        return iter(())
    return store_of(session).iter_blocks(row.key)


def read_array(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    dtype: str,
    n_columns: int | None,
    start: int = 0,
    stop: int | None = None,
    run_id: int | None = None,
) -> NDArray:
    """Rows [start, stop) of a stored array, reading only the chunks that overlap them; an
    empty array of ``dtype`` when there is none."""
    row = _row(session, dataset_id, kind, run_id)
    if row is None:
        shape = (0, n_columns) if n_columns is not None else (0,)
        return np.empty(shape, dtype=np.dtype(dtype))
    return store_of(session).read(row.key, start, stop)


def dask_array(
    *,
    session: Session,
    dataset_id: int | None,
    kind: str,
    rows_per_task: int,
    run_id: int | None = None,
) -> Any:
    """A stored array as a lazy dask array read by the tasks themselves; None if absent."""
    row = _row(session, dataset_id, kind, run_id)
    if row is None:
        return None
    return store_of(session).dask_array(row.key, rows_per_task)


def read_strings(
    *, session: Session, dataset_id: int, kind: str, start: int = 0, stop: int | None = None
) -> list[str]:
    row = _row(session, dataset_id, kind)
    if row is None:
        return []
    return store_of(session).read_strings(row.key, start, stop)


def read_blob(
    *, session: Session, dataset_id: int | None, kind: str, run_id: int | None = None
) -> bytes | None:
    row = _row(session, dataset_id, kind, run_id)
    return None if row is None else store_of(session).read_bytes(row.key)


def iter_blob(
    *, session: Session, dataset_id: int | None, kind: str, run_id: int | None = None
) -> tuple[int, Iterator[bytes]] | None:
    """A stored blob's size and its bytes a chunk at a time (a slide's file, streamed to a
    browser without being held), or None."""
    row = _row(session, dataset_id, kind, run_id)
    if row is None:
        return None
    blocks = store_of(session).iter_blocks(row.key)
    return int(row.shape[0]), (block.tobytes() for block in blocks)


# -- deleting -------------------------------------------------------------------------------


def delete_arrays(
    *, session: Session, dataset_id: int | None, kinds: list[str], run_id: int | None = None
) -> None:
    """Those arrays: their rows now, their bytes once the transaction commits."""
    for row in _rows(session, dataset_id, run_id):
        if row.kind in kinds:
            doom(session, row.key)
            session.delete(row)
    session.flush()


def remove_owners_directories(
    *, session: Session, dataset_ids: list[int], run_ids: list[int]
) -> None:
    """After a deletion has committed: the datasets' and runs' directories, found by their
    names (<id>-<token>) in the store, removed. The commit's own hook (`forget_datasets`)
    removes them already; in CI a deletion once left all of them behind with no removal in
    the hook's log, so the deleting request also removes them itself (a directory already gone
    is no error)."""
    store = store_of(session)
    for kind, ids in (("datasets", dataset_ids), ("runs", run_ids)):
        wanted = {str(i) for i in ids}
        if not wanted:
            continue
        for name in store.children(kind):
            if name.split("-", 1)[0] in wanted:
                store.delete(f"{kind}/{name}")


def forget_datasets(*, session: Session, dataset_ids: list[int]) -> None:
    """Before datasets are deleted (their rows, runs and arrays' rows go by cascade): their
    directories and their runs' go from the store once the deletion commits."""
    if not dataset_ids:
        return
    runs = select(Run.id).where(Run.dataset_id.in_(dataset_ids))
    rows = session.scalars(
        select(StoredArray).where(
            or_(StoredArray.dataset_id.in_(dataset_ids), StoredArray.run_id.in_(runs))
        )
    )
    for prefix in {row.prefix for row in rows}:
        doom(session, prefix)
