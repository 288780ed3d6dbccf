"""A run's labels (one cluster per item, int32) in the array store, beside its dataset's
arrays: a worker on another machine writes them with the store URL and the run id alone."""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.store import chunks

LABELS = "labels"
LABEL_CHUNK_ROWS = 1 << 20  # 4 MiB per chunk: runs are read whole or by page


def write_labels(*, session: Session, run_id: int, labels: NDArray[np.integer]) -> None:
    chunks.write_array(
        session=session,
        dataset_id=None,
        run_id=run_id,
        kind=LABELS,
        array=np.asarray(labels, dtype=np.int32),
        chunk_rows=LABEL_CHUNK_ROWS,
    )


def write_labels_from_dask(*, session: Session, run_id: int, labels: Any) -> None:
    """A data-parallel run's labels (a lazy dask array), written by the workers that compute
    them, chunk by chunk."""
    chunks.write_dask_array(session=session, run_id=run_id, kind=LABELS, array=labels)


def labels_dask(*, session: Session, run_id: int, rows_per_task: int) -> Any:
    """The run's labels as a lazy dask array read by the tasks themselves, or None."""
    return chunks.dask_array(
        session=session, dataset_id=None, run_id=run_id, kind=LABELS, rows_per_task=rows_per_task
    )


def labels_count(*, session: Session, run_id: int) -> int | None:
    """How many labels the run has (from the store's metadata, no array read), or None."""
    row = chunks.stored(session, None, LABELS, run_id)
    return None if row is None else int(row.shape[0])


def read_labels(*, session: Session, run_id: int) -> NDArray[np.int32] | None:
    """The run's labels, or None when it has none (not finished, or failed)."""
    if chunks.stored(session, None, LABELS, run_id) is None:
        return None
    return chunks.read_array(
        session=session, dataset_id=None, run_id=run_id, kind=LABELS, dtype="int32", n_columns=None
    ).astype(np.int32, copy=False)
