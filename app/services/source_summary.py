"""What a dataset imported by reference keeps of its whole table, made by reading the source
block by block through the upload's sink (`TableSink`, values not stored): the statistics, the
PCA view, a wide table's components, the ids and the classes. It is read in the background
after an import (`source_reading.py`) and again by a sync (`source_sync.py`).

The read takes no write lock while it lasts: its new PCA view row is committed first, the
source is read with SQL writes refused and the arrays' records deferred, and on any failure
that view goes again (the store forgets what the rolled-back transaction wrote)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.db.models import Dataset, View
from app.services.ingest.appended_rows import Earlier
from app.services.ingest.short_transactions import writes_refused
from app.services.ingest.table_sink import TableSink
from app.store import chunks
from app.store.sources.read_ahead import read_ahead
from app.store.sources.tables import SourceTable

Progress = Callable[[float], None]


@dataclass(frozen=True)
class SourceSummary:
    view: View  # the new PCA view, committed, its arrays written and recorded (not committed)
    facts: dict[str, Any]  # what `TableSink.finish` says of the whole table

    def dataset_fields(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The dataset's columns as the summary sets them, ``meta`` (without any earlier
        summary's) completed."""
        facts = self.facts
        kept = {k: v for k, v in meta.items() if k not in ("feature_stats", "model_features")}
        model = facts["model_features"]
        return {
            "n_items": facts["n_items"],
            "ground_truth_classes": facts["ground_truth_classes"],
            "meta": {
                **kept,
                "feature_stats": facts["feature_stats"],
                **({"model_features": model} if model else {}),
            },
        }


def summarize_source(
    session: Session,
    dataset: Dataset,
    table: SourceTable,
    chunk_rows: int,
    progress: Progress | None = None,
    earlier: Earlier | None = None,
) -> SourceSummary:
    """Read ``table`` once for ``dataset``'s derived arrays; ``progress(fraction)`` after each
    block (it may raise to stop the read, which then leaves nothing behind). With ``earlier``
    (`appended_rows.py`: the source only gained rows after those that read covered), only the
    rows after them are read, the rest continued from it."""
    view = View(dataset_id=dataset.id, name="PCA", method="pca", params={})
    session.add(view)
    session.commit()
    try:
        with chunks.deferred_records(session), session.no_autoflush, writes_refused(session):
            facts = _read(session, dataset, view, table, chunk_rows, progress or _silent, earlier)
    except BaseException:
        forget_view(session, view)
        raise
    return SourceSummary(view, facts)


def _read(
    session: Session,
    dataset: Dataset,
    view: View,
    table: SourceTable,
    chunk_rows: int,
    progress: Progress,
    earlier: Earlier | None,
) -> dict[str, Any]:
    first = earlier.n_rows if earlier is not None else 0
    with TableSink(
        session=session,
        dataset=dataset,
        pca_view=view,
        feature_names=list(table.columns),
        dtype=table.dtype,
        chunk_rows=chunk_rows,
        id_column=dataset.id_column,
        ground_truth_column=dataset.ground_truth_column,
        read_back=(
            (lambda: read_ahead(table.blocks(chunk_rows)))
            if first == 0
            else (lambda: (block for _, _, block in read_ahead(_blocks(table, chunk_rows, first))))
        ),
        earlier=earlier,
    ) as sink:
        for start, stop, features in read_ahead(_blocks(table, chunk_rows, first)):
            sink.add(
                features,
                _strings(table, dataset.id_column, start, stop),
                _strings(table, dataset.ground_truth_column, start, stop),
            )
            progress((stop - first) / max(1, table.n_rows - first))
        return sink.finish()


def _blocks(
    table: SourceTable, chunk_rows: int, first: int = 0
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Each block's row range and values from row ``first`` on, blocks of at most
    `SourceTable.block_rows`."""
    rows = table.block_rows(chunk_rows)
    for start in range(first, table.n_rows, rows):
        stop = min(start + rows, table.n_rows)
        yield start, stop, table.read(start, stop)


def _strings(table: SourceTable, column: str | None, start: int, stop: int) -> list[str] | None:
    return table.strings(column, start, stop) if column else None


def _silent(_fraction: float) -> None:
    return None


def forget_view(session: Session, view: View) -> None:
    """After a failed read: what it wrote goes with the rollback, and the view it made."""
    session.rollback()  # the store forgets what this transaction wrote
    made = session.get(View, view.id)
    if made is not None:
        session.delete(made)
        session.commit()
