"""A dataset imported by reference brought up to date with its source (`POST .../sync`).

The request compares the source with what was read (each object's version: metadata only,
as an import's 201 is) and says what changed (new, changed and deleted objects); if anything
did, the dataset is read again **in the background**, as an import is read: it is
`featurizing` meanwhile (runs and exports wait, as after an import), and its statistics, PCA
view, a wide table's components, ids and classes are replaced in one short write transaction
at the end. A 20M-row source is not read inside anyone's request. When the source only gained
objects after those read, only their rows are read (`ingest/appended_rows.py`: the earlier
read continued, the view's axes kept).

Items are rows: objects added after the recorded ones (a bucket that grows) move no row, and
annotations keep their items; when the row count changes otherwise and a live annotation names
an item past the rows that keep their place, the sync is refused (409) naming those
annotations, since they would silently move to other items; nothing is ever dropped without
the user's say (checked again when the read ends, as an annotation could be added
meanwhile). Views other than PCA, made from the old values, are removed and counted; runs keep
their results for the rows as they were (the dataset's revision moves on, so they read as older
than the data).

A background read that fails (the source changed again or went, a value became text) leaves
the dataset as it was before the sync, `ready`, with the reason in its featurization's
`last_sync`; the source then still reads as changed, so runs are refused until a sync
succeeds."""

import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Annotation, Dataset, User, View
from app.services.datasets import require_ready
from app.services.errors import Conflict, InvalidInput
from app.services.ingest.appended_rows import Earlier, earlier_read
from app.services.ingest.label_column import record_label_annotations
from app.services.source_labels import read_labels
from app.services.source_summary import forget_view, summarize_source
from app.store import chunks
from app.store.dataset_arrays import MODEL_FEATURES
from app.store.sources.allowed import SourceRefused, allowed_source
from app.store.sources.binding import sources_of
from app.store.sources.referenced import source_record, table_of
from app.store.sources.tables import SourceError, SourceFile, SourceTable, inspect_table


@dataclass(frozen=True)
class SyncReport:
    new: list[str]
    changed: list[str]
    deleted: list[str]
    n_items_before: int
    n_items: int  # the source's rows now
    views_removed: int  # views other than PCA that the read replaces
    rows_read: int = 0  # from the source: the added rows only when nothing before them moved

    @property
    def reading(self) -> bool:
        """Whether the dataset is read again (in the background)."""
        return bool(self.new or self.changed or self.deleted)


def sync_dataset(*, session: Session, dataset: Dataset, user: User | None = None) -> SyncReport:
    """Compare the source with what was read; if anything differs, queue the dataset to be
    read again in the background (the caller commits and submits it, as after an import).
    Rows added after those read bring their label column's labels as ``user``'s label
    annotations (one act), as the import did for the first rows."""
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
    append = kept == n_before < table.n_rows and earlier_read(session, dataset) is not None
    views = list(session.scalars(select(View).where(View.dataset_id == dataset.id)))
    report = SyncReport(
        new=new,
        changed=changed,
        deleted=deleted,
        n_items_before=n_before,
        n_items=table.n_rows,
        views_removed=sum(1 for view in views if view.method != "pca"),
        rows_read=table.n_rows - n_before if append else table.n_rows,
    )
    previous = dict(dataset.featurization or {})
    previous.pop("last_sync", None)
    dataset.status = "featurizing"
    dataset.featurization = {
        **previous,
        "reads_source": True,
        "job": uuid.uuid4().hex,
        "progress": 0.0,
        "requested_by": user.id if user else None,
        "sync": {
            "source": source_record(allowed, table),
            "rows_kept": kept,
            "append": append,
            "views": [view.id for view in views],
            "report": asdict(report),
            "previous": previous,
        },
    }
    return report


def read_synced_table(
    session: Session, dataset: Dataset, chunk_rows: int, progress: Callable[[float], None]
) -> dict[str, Any]:
    """The background half of a sync (run as the dataset's featurization): the source as the
    sync found it read again, then recorded with the old views removed, in one short
    transaction. The dataset's fields to set (its own are set already); the featurization's
    `last_sync` says what was done."""
    record = dataset.featurization or {}
    pending = record["sync"]
    _forget_views_of_a_cut_short_read(session, dataset, set(pending["views"]))
    table = table_of(session, pending["source"])
    if table.n_rows != dataset.n_items:
        _refuse_moving_annotations(session, dataset, table.n_rows, pending["rows_kept"])
    earlier = earlier_read(session, dataset) if pending["append"] else None
    user_id = record.get("requested_by")
    user = session.get(User, user_id) if user_id is not None else None
    fields = _read_again(session, dataset, table, chunk_rows, progress, earlier, user)
    dataset.meta = fields["meta"] = {**fields["meta"], "source": pending["source"]}
    return fields


def _forget_views_of_a_cut_short_read(session: Session, dataset: Dataset, old: set[int]) -> None:
    """A view made by this sync's read before a server was killed under it goes (the views
    the dataset had before the sync stay until the read is recorded)."""
    for view in session.scalars(select(View).where(View.dataset_id == dataset.id)):
        if view.id not in old:
            chunks.delete_arrays(session=session, dataset_id=dataset.id, kinds=[view.chunk_kind])
            session.delete(view)
    session.commit()


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
    progress: Callable[[float], None],
    earlier: Earlier | None,
    user: User | None,
) -> dict[str, Any]:
    """The dataset's derived arrays made again from ``table`` (`source_summary.py`), then
    recorded and the old views removed (not yet committed; on any error, the new view is
    removed again). The dataset's fields as set."""
    old_views = list(session.scalars(select(View).where(View.dataset_id == dataset.id)))
    column = dataset.label_column if earlier is not None else None
    labels = (
        read_labels(table, column, progress, first=earlier.n_rows) if earlier and column else None
    )
    summary = summarize_source(session, dataset, table, chunk_rows, progress, earlier=earlier)
    try:
        for view in old_views:
            chunks.delete_arrays(session=session, dataset_id=dataset.id, kinds=[view.chunk_kind])
            session.delete(view)
        if not summary.facts["model_features"]:
            chunks.delete_arrays(session=session, dataset_id=dataset.id, kinds=[MODEL_FEATURES])
        fields = {
            **summary.dataset_fields(dataset.meta),
            "revision": dataset.revision + 1,  # runs before this read older than the data
        }
        for name, value in fields.items():
            setattr(dataset, name, value)
        if labels is not None:
            record_label_annotations(session=session, dataset=dataset, user=user, labels=labels)
    except BaseException:
        forget_view(session, summary.view)
        raise
    return fields
