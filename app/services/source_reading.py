"""A table imported by reference is registered from its metadata alone (the request answers at
once) and read in the background for what a dataset keeps of the whole table
(`source_summary.py`): the executor runs `read_imported_table` as the dataset's featurization,
so it has the same statuses (`featurizing` -> `ready` or `failed`), progress, fair turns and
recovery after a restart; its items exist once it is ready. A label column named at import is
read first (one column, as Arrow) and its labels become the importing user's label annotations,
one act, in the transaction that makes the dataset ready (`ingest/label_column.py`)."""

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlalchemy.orm import Session

from app.db.models import Dataset, User
from app.jobs.featurize.featurizer import InputRefused
from app.services.errors import ServiceError
from app.services.ingest.label_column import LabelColumn, Place, record_label_annotations
from app.services.source_summary import forget_view, summarize_source
from app.store.sources.allowed import SourceRefused
from app.store.sources.filesystems import filesystem
from app.store.sources.parquet_source import parquet_pieces
from app.store.sources.referenced import referenced_table
from app.store.sources.tables import SourceError, SourceTable
from app.store.sources.values import at
from app.store.views import delete_views

# An AnnData's obs column is read as text this many rows at a time.
LABEL_BLOCK_ROWS = 1 << 18


def read_imported_table(
    session: Session, dataset: Dataset, chunk_rows: int, progress: Callable[[float], None]
) -> dict[str, Any]:
    """Read the dataset's source once (`featurizer.TableReader`); a fault of the source (a NaN,
    a text value, a duplicate id, a label too long, an object changed or gone meanwhile) fails
    the dataset with a message naming the object, row and column."""
    try:
        table = referenced_table(session, dataset)
        if table is None:
            raise InputRefused(f"dataset {dataset.id} was not imported by reference")
        # A view here can only be a read's cut short by a server that was killed: it goes.
        delete_views(session=session, dataset_id=dataset.id)
        session.commit()
        column = dataset.label_column
        labels = read_labels(table, column, progress) if column else None
        summary = summarize_source(session, dataset, table, chunk_rows, progress)
        if labels is not None:
            try:
                author = session.get(User, dataset.created_by_id) if dataset.created_by_id else None
                record_label_annotations(
                    session=session, dataset=dataset, user=author, labels=labels
                )
            except BaseException:
                forget_view(session, summary.view)
                raise
    except SourceRefused as exc:
        raise InputRefused(f"its source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise InputRefused(str(exc)) from None
    except ServiceError as exc:  # the sink's refusals (duplicate ids, overflowing values)
        raise InputRefused(exc.detail) from None
    return summary.dataset_fields(dataset.meta)


def read_labels(
    table: SourceTable,
    column: str,
    progress: Callable[[float], None] | None = None,
    first: int = 0,
) -> LabelColumn:
    """The label column of a Parquet table (as Arrow, a row group at a time), or of a CSV or
    an AnnData file's obs (as text, in blocks); ``progress(0.0)`` between parts lets a stopping
    server stop it. A refusal names the object and the row. From row ``first`` on (a sync that
    reads only the rows added): the rows before it have no label here."""
    if table.format == "parquet":
        labels = LabelColumn(column, numbers_in_text=False)
        labels.add(pa.nulls(first))
        fs = filesystem(table.protocol, table.options)
        multi = len(table.files) > 1
        offset = 0
        for file in table.files:
            if offset + file.rows > first:
                a = max(0, first - offset)
                pieces = parquet_pieces(
                    fs, table.options, file, [column], a, file.rows, strings=True
                )
                for piece, local in pieces:
                    place = _place(file.url, offset + local, local, multi)
                    labels.add(piece.column(column), place)
                    if progress is not None:
                        progress(0.0)
            offset += file.rows
        return labels
    labels = LabelColumn(column, numbers_in_text=True)  # an obs column, read as text
    labels.add(pa.nulls(first))
    url = table.files[0].url if table.files else ""
    for start in range(first, table.n_rows, LABEL_BLOCK_ROWS):
        stop = min(start + LABEL_BLOCK_ROWS, table.n_rows)
        labels.add(table.strings(column, start, stop), _place(url, start, start, False))
        if progress is not None:
            progress(0.0)
    return labels


def _place(url: str, first: int, local: int, multi: bool) -> Place:
    """A part's k-th row as the source's refusals name it: the object, the table's row (and
    the file's own row in a dataset of files)."""
    return lambda k: at(url, first + k, local + k, multi)
