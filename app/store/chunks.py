"""Arrays stored as row chunks of raw little-endian bytes in `dataset_chunks`."""

import json
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.models import DatasetChunk


def _write_blocks(
    session: Session, dataset_id: int, kind: str, blocks: Iterator[tuple[int, int, bytes]]
) -> None:
    """Chunks from (start row, rows, bytes) blocks, flushed one at a time: the whole table is
    never held twice in memory."""
    for index, (start, n_rows, data) in enumerate(blocks):
        session.add(
            DatasetChunk(
                dataset_id=dataset_id,
                kind=kind,
                index=index,
                start_row=start,
                n_rows=n_rows,
                data=data,
            )
        )
        session.flush()


def write_array(
    *, session: Session, dataset_id: int, kind: str, array: np.ndarray, chunk_rows: int
) -> None:
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    starts = range(0, max(len(little), 1), chunk_rows)
    blocks = (np.ascontiguousarray(little[start : start + chunk_rows]) for start in starts)
    _write_blocks(
        session,
        dataset_id,
        kind,
        ((s, len(b), b.tobytes()) for s, b in zip(starts, blocks, strict=True)),
    )


def write_strings(
    *, session: Session, dataset_id: int, kind: str, values: list[str], chunk_rows: int
) -> None:
    starts = range(0, len(values), chunk_rows)
    blocks = (values[start : start + chunk_rows] for start in starts)
    _write_blocks(
        session,
        dataset_id,
        kind,
        ((s, len(b), json.dumps(b).encode()) for s, b in zip(starts, blocks, strict=True)),
    )


def write_blob(*, session: Session, dataset_id: int, kind: str, data: bytes) -> None:
    session.add(
        DatasetChunk(dataset_id=dataset_id, kind=kind, index=0, start_row=0, n_rows=1, data=data)
    )
    session.flush()


def _chunks(
    session: Session, dataset_id: int, kind: str, start: int = 0, stop: int | None = None
) -> Iterator[DatasetChunk]:
    query = select(DatasetChunk).where(
        DatasetChunk.dataset_id == dataset_id, DatasetChunk.kind == kind
    )
    if stop is not None:
        query = query.where(
            DatasetChunk.start_row < stop, DatasetChunk.start_row + DatasetChunk.n_rows > start
        )
    # One chunk at a time: the whole matrix is never held as ORM objects at once.
    for chunk_id in session.scalars(
        query.with_only_columns(DatasetChunk.id).order_by(DatasetChunk.index)
    ).all():
        chunk = session.get(DatasetChunk, chunk_id)
        assert chunk is not None
        yield chunk
        session.expunge(chunk)


def iter_array_blocks(
    *, session: Session, dataset_id: int, kind: str, dtype: str, n_columns: int | None
) -> Iterator[NDArray]:
    """Each stored chunk as an array, in row order."""
    for chunk in _chunks(session, dataset_id, kind):
        yield _decode(chunk, dtype, n_columns)


def read_array(
    *,
    session: Session,
    dataset_id: int,
    kind: str,
    dtype: str,
    n_columns: int | None,
    start: int = 0,
    stop: int | None = None,
) -> NDArray:
    """Rows [start, stop) of a stored array, reading only the chunks that overlap them."""
    blocks = []
    for chunk in _chunks(session, dataset_id, kind, start, stop):
        block = _decode(chunk, dtype, n_columns)
        lo = max(start - chunk.start_row, 0)
        hi = block.shape[0] if stop is None else min(stop - chunk.start_row, block.shape[0])
        blocks.append(block[lo:hi])
    if not blocks:
        shape = (0, n_columns) if n_columns is not None else (0,)
        return np.empty(shape, dtype=np.dtype(dtype).newbyteorder("<"))
    return np.concatenate(blocks)


def read_strings(
    *, session: Session, dataset_id: int, kind: str, start: int = 0, stop: int | None = None
) -> list[str]:
    values: list[str] = []
    for chunk in _chunks(session, dataset_id, kind, start, stop):
        block: list[str] = json.loads(chunk.data)
        lo = max(start - chunk.start_row, 0)
        hi = len(block) if stop is None else min(stop - chunk.start_row, len(block))
        values.extend(block[lo:hi])
    return values


def read_blob(*, session: Session, dataset_id: int, kind: str) -> bytes | None:
    return next((chunk.data for chunk in _chunks(session, dataset_id, kind)), None)


def _decode(chunk: DatasetChunk, dtype: str, n_columns: int | None) -> NDArray:
    array = np.frombuffer(chunk.data, dtype=np.dtype(dtype).newbyteorder("<"))
    return array.reshape(-1, n_columns) if n_columns is not None else array


def delete_arrays(*, session: Session, dataset_id: int, kinds: list[str]) -> None:
    session.execute(
        delete(DatasetChunk).where(
            DatasetChunk.dataset_id == dataset_id, DatasetChunk.kind.in_(kinds)
        )
    )
    session.flush()
