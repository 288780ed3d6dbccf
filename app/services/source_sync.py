"""A dataset imported by reference brought up to date with its source (`POST .../sync`): what
changed is said (new, changed and deleted objects), and the dataset's own arrays (statistics,
PCA view, a wide table's components, ids and classes) are made again from the source as it is
now, in short write transactions as an upload is, so nobody waits on it. When the source only
gained objects after those read, only their rows are read (`ingest/appended_rows.py`: the
earlier read continued, the view's axes kept).

Items are rows: objects added after the recorded ones (a bucket that grows) move no row, and
annotations keep their items; when the row count changes otherwise and a live annotation names
an item past the rows that keep their place, the sync is refused (409) naming those
annotations, since they would silently move to other items; nothing is ever dropped without
the user's say. Views other than PCA, made from
the old values, are removed and counted; runs keep their results for the rows as they were
(the dataset's revision moves on, so they read as older than the data)."""

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Annotation, Dataset, User, View
from app.services.datasets import require_ready
from app.services.errors import Conflict, InvalidInput
from app.services.ingest.appended_rows import Earlier, earlier_read
from app.services.ingest.label_column import record_label_annotations
from app.services.source_reading import read_labels
from app.services.source_summary import forget_view, summarize_source
from app.store import chunks
from app.store.dataset_arrays import MODEL_FEATURES
from app.store.sources.allowed import SourceRefused, allowed_source
from app.store.sources.binding import sources_of
from app.store.sources.referenced import source_record
from app.store.sources.tables import SourceError, SourceFile, SourceTable, inspect_table


@dataclass(frozen=True)
class SyncReport:
    new: list[str]
    changed: list[str]
    deleted: list[str]
    n_items_before: int
    n_items: int
    views_removed: int
    rows_read: int = 0  # from the source: the added rows only when nothing before them moved


def sync_dataset(
    *, session: Session, dataset: Dataset, chunk_rows: int, user: User | None = None
) -> SyncReport:
    """Compare the source with what was read; if anything differs, read it again. Rows added
    after those read bring their label column's labels as ``user``'s label annotations (one
    act), as the import did for the first rows."""
    record = (dataset.meta or {}).get("source")
    if not record:
        raise InvalidInput(
            f"dataset {dataset.id} was uploaded, not imported by reference: it has no source "
            "to sync with"
        )
    if dataset.kind == "image":
        raise InvalidInput(
            f"dataset {dataset.id} is an image read in place: each featurization reads it as "
            "it is then, refusing a changed source; import it again to read a changed image"
        )
    require_ready(dataset)
    try:
        allowed = allowed_source(record["url"], sources_of(session))
        table = inspect_table(
            allowed.protocol,
            allowed.path,
            allowed.options,
            record["format"],
            record["columns"],
            known=[SourceFile.from_record(f) for f in record["files"]],
        )
    except SourceRefused as exc:
        raise Conflict(f"dataset {dataset.id}'s source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise Conflict(f"dataset {dataset.id}'s source cannot be read: {exc}") from None
    before = {f["url"]: f["version"] for f in record["files"]}
    now = {f.url: f.version for f in table.files}
    new = [url for url in now if url not in before]
    deleted = [url for url in before if url not in now]
    changed = [url for url in now if url in before and now[url] != before[url]]
    n_before = dataset.n_items
    if not (new or deleted or changed):
        return SyncReport([], [], [], n_before, n_before, 0, 0)
    kept = _rows_kept(record, table)
    if table.n_rows != n_before:
        _refuse_moving_annotations(session, dataset, table.n_rows, kept)
    # Only rows added after those read: those alone are read (the rest continued).
    earlier = earlier_read(session, dataset) if kept == n_before < table.n_rows else None
    views_removed = _read_again(session, dataset, table, chunk_rows, earlier, user)
    dataset.meta = {**dataset.meta, "source": source_record(allowed, table)}
    session.commit()
    rows_read = table.n_rows - (earlier.n_rows if earlier is not None else 0)
    return SyncReport(new, changed, deleted, n_before, dataset.n_items, views_removed, rows_read)


def _rows_kept(record: dict[str, Any], table: SourceTable) -> int:
    """How many leading rows keep their place: those of the recorded objects that are still the
    first objects of the source, in order and unchanged. Objects added after them (a bucket
    that grows) move no row."""
    kept = 0
    for was, now in zip(record["files"], table.files, strict=False):
        if was["url"] != now.url or was["version"] != now.version or was["rows"] != now.rows:
            break
        kept += now.rows
    return kept


def _refuse_moving_annotations(
    session: Session, dataset: Dataset, n_rows: int, rows_kept: int
) -> None:
    """Refuse (409) when a live annotation names an item at or after ``rows_kept`` (it would
    name another item, or none, once the source is read again), saying which; a boundary
    stands for every item of its view."""
    live = session.scalars(
        select(Annotation)
        .where(Annotation.dataset_id == dataset.id, Annotation.deleted_at.is_(None))
        .order_by(Annotation.id)
    ).all()
    moving = [a.id for a in live if _highest_item(a) >= rows_kept]
    if moving:
        shown = ", ".join(str(i) for i in moving[:10]) + (" ..." if len(moving) > 10 else "")
        raise Conflict(
            f"the source now has {n_rows:,} rows (it had {dataset.n_items:,}) and only its "
            f"first {rows_kept:,} keep their place; {len(moving):,} of the dataset's "
            f"annotations name items past them (annotation ids {shown}) and would move to "
            "other items. Undo or delete them first, or import the source again as a new "
            "dataset"
        )


def _highest_item(annotation: Annotation) -> int:
    payload = annotation.payload or {}
    if "view_id" in payload:  # a boundary: every item of the view
        return 1 << 62
    named = [payload.get(key) or [] for key in ("items", "items_a", "items_b")]
    return max((max(items) for items in named if items), default=-1)


def _read_again(
    session: Session,
    dataset: Dataset,
    table: SourceTable,
    chunk_rows: int,
    earlier: Earlier | None = None,
    user: User | None = None,
) -> int:
    """The dataset's derived arrays made again from ``table`` (`source_summary.py`), then
    recorded and the old views removed in one short transaction (or, on any error, the new
    view removed again). How many views other than PCA were removed."""
    old_views = list(session.scalars(select(View).where(View.dataset_id == dataset.id)))
    column = dataset.label_column if earlier is not None else None
    try:
        labels = read_labels(table, column, first=earlier.n_rows) if earlier and column else None
        summary = summarize_source(session, dataset, table, chunk_rows, earlier=earlier)
    except SourceError as exc:
        raise Conflict(f"dataset {dataset.id}'s source cannot be read: {exc}") from None
    try:
        for view in old_views:
            chunks.delete_arrays(session=session, dataset_id=dataset.id, kinds=[view.chunk_kind])
            session.delete(view)
        if not summary.facts["model_features"]:
            chunks.delete_arrays(session=session, dataset_id=dataset.id, kinds=[MODEL_FEATURES])
        for name, value in summary.dataset_fields(dataset.meta).items():
            setattr(dataset, name, value)
        dataset.revision += 1  # runs before this read older than the data
        if labels is not None:
            record_label_annotations(session=session, dataset=dataset, user=user, labels=labels)
    except BaseException:
        forget_view(session, summary.view)
        raise
    return sum(1 for view in old_views if view.method != "pca")
