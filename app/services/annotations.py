"""Annotation use cases: validate and record an expert act, list, undo and redo.

Each act bumps the dataset's revision atomically. Item sets are stored as sorted, unique item
indices (row positions 0..n_items-1), never expanded into pairs.
"""

import math
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.db.base import utcnow
from app.db.models import Annotation, Dataset, User, View
from app.engine.image.strokes import check_strokes
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.item_ids import resolve_item_ids
from app.services.paging import page
from app.sideinfo.model import (
    BOUNDARY,
    CANNOT_LINK,
    LABEL,
    MUST_LINK,
    SCRIBBLE,
    AnnotationRecord,
)

MAX_LABEL_LENGTH = 100


def _items(dataset: Dataset, values: list[int], field: str) -> list[int]:
    if not values:
        raise InvalidInput(f"{field} is empty")
    array = np.asarray(values, dtype=np.int64)
    bad = (array < 0) | (array >= dataset.n_items)
    if bad.any():
        raise InvalidInput(
            f"{field} has item {int(array[bad][0])} out of range; dataset {dataset.id} has "
            f"items 0 to {dataset.n_items - 1}"
        )
    return np.unique(array).tolist()


def _label(value: str, field: str) -> str:
    value = value.strip()
    if not value or len(value) > MAX_LABEL_LENGTH:
        raise InvalidInput(f"{field} must be 1 to {MAX_LABEL_LENGTH} characters")
    return value


def _strokes(dataset: Dataset, strokes: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    """Strokes checked against the image: inside it, a positive radius (422 otherwise)."""
    if dataset.kind != "image":
        raise InvalidInput(
            f"{field}: strokes are drawn on images; dataset {dataset.id} is a table (name items)"
        )
    image = dataset.meta["image"]
    clean = [
        {"points": [[float(x), float(y)] for x, y in s["points"]], "radius": float(s["radius"])}
        for s in strokes
    ]
    if not clean:
        raise InvalidInput(f"{field} is empty")
    try:
        check_strokes(clean, (int(image["height"]), int(image["width"])))
    except ValueError as exc:
        raise InvalidInput(f"{field}: {exc}") from None
    return clean


def scribble_problem(label: str | None, erase: bool | None) -> str | None:
    """Why a scribble is refused, or None: it gives a label or erases, never both or neither
    (the API's schema asks the same)."""
    if erase and label is not None:
        return "an eraser scribble takes no label"
    if not erase and label is None:
        return 'a scribble needs a label (or "erase": true to remove labels)'
    return None


def _scribble(dataset: Dataset, body: dict[str, Any]) -> dict[str, Any]:
    strokes = _strokes(dataset, body["strokes"], "strokes")
    problem = scribble_problem(body.get("label"), body.get("erase"))
    if problem:
        raise InvalidInput(problem)
    if body.get("erase"):
        return {"erase": True, "strokes": strokes}
    return {"label": _label(body["label"], "label"), "strokes": strokes}


def _stroke_link(dataset: Dataset, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if kind == MUST_LINK:
        return {"strokes": _strokes(dataset, body["strokes"], "strokes")}
    return {
        "strokes_a": _strokes(dataset, body["strokes_a"], "strokes_a"),
        "strokes_b": _strokes(dataset, body["strokes_b"], "strokes_b"),
    }


def validate_payload(
    *, session: Session, dataset: Dataset, kind: str, body: dict[str, Any]
) -> dict[str, Any]:
    # Strokes are in pixels: an image takes them even while it is being featurized.
    if kind == SCRIBBLE:
        return _scribble(dataset, body)
    if body.get("strokes") is not None or body.get("strokes_a") is not None:
        return _stroke_link(dataset, kind, body)
    if dataset.status != "ready" or dataset.n_items == 0:
        raise InvalidInput(f"dataset {dataset.id} has no items to annotate yet")
    if kind == LABEL:
        return {
            "items": _items(dataset, body["items"], "items"),
            "label": _label(body["label"], "label"),
        }
    if kind == MUST_LINK:
        items = _items(dataset, body["items"], "items")
        if len(items) < 2:
            raise InvalidInput("a must-link needs at least 2 distinct items")
        return {"items": items}
    if kind == CANNOT_LINK:
        a = _items(dataset, body["items_a"], "items_a")
        b = _items(dataset, body["items_b"], "items_b")
        both = sorted(set(a) & set(b))
        if both:
            raise InvalidInput(
                f"item {both[0]} is in both items_a and items_b; it cannot be apart from itself"
            )
        return {"items_a": a, "items_b": b}
    if kind == BOUNDARY:
        return _boundary(session=session, dataset=dataset, body=body)
    raise InvalidInput(f"unknown annotation kind {kind!r}")


def _boundary(*, session: Session, dataset: Dataset, body: dict[str, Any]) -> dict[str, Any]:
    view = session.get(View, body["view_id"])
    if view is None or view.dataset_id != dataset.id:
        raise InvalidInput(f"dataset {dataset.id} has no view with id {body['view_id']}")
    points = [[float(x), float(y)] for x, y in body["points"]]
    if len(points) < 2:
        raise InvalidInput("a boundary needs at least 2 points")
    if not all(math.isfinite(v) for point in points for v in point):
        raise InvalidInput("boundary points must be finite numbers")
    labels = [_label(v, "labels") for v in body["labels"]]
    if len(labels) != 2 or labels[0] == labels[1]:
        raise InvalidInput(
            "a boundary needs two different side labels: [left/inside, right/outside]"
        )
    return {"view_id": view.id, "points": points, "labels": labels}


def _next_revision(session: Session, dataset: Dataset) -> int:
    # One UPDATE ... RETURNING: concurrent writers each get their own revision number.
    revision = session.execute(
        update(Dataset)
        .where(Dataset.id == dataset.id)
        .values(revision=Dataset.revision + 1)
        .returning(Dataset.revision)
    ).scalar_one()
    session.refresh(dataset, ["revision"])
    return int(revision)


def create_annotation(
    *,
    session: Session,
    dataset: Dataset,
    user: User,
    kind: str,
    body: dict[str, Any],
    confidence: float | None,
) -> Annotation:
    body = resolve_item_ids(session=session, dataset=dataset, body=body)
    payload = validate_payload(session=session, dataset=dataset, kind=kind, body=body)
    if confidence is not None and kind not in (MUST_LINK, CANNOT_LINK):
        raise InvalidInput("only must-link and cannot-link annotations take a confidence")
    revision = _next_revision(session, dataset)
    _empty_redo_stack(session, dataset)  # a new act
    annotation = Annotation(
        dataset_id=dataset.id,
        kind=kind,
        payload=payload,
        confidence=confidence,
        revision=revision,
        author_id=user.id,
    )
    session.add(annotation)
    session.flush()
    return annotation


# Live annotations are undoable; undone ones (with the revision that undid them) are redoable.
LIVE = Annotation.deleted_at.is_(None)
REDOABLE = Annotation.deleted_revision.is_not(None)


def list_annotations(
    *, session: Session, dataset: Dataset, limit: int, offset: int, include_deleted: bool
) -> tuple[list[Annotation], int]:
    query = select(Annotation).where(Annotation.dataset_id == dataset.id)
    if not include_deleted:
        query = query.where(LIVE)
    return page(session, query, Annotation.id, limit, offset)


def can_redo(*, session: Session, dataset: Dataset) -> bool:
    return _newest(session, dataset, REDOABLE, Annotation.deleted_revision) is not None


def can_undo(*, session: Session, dataset: Dataset) -> bool:
    return _newest(session, dataset, LIVE, Annotation.id) is not None


def _newest(
    session: Session, dataset: Dataset, state: ColumnElement[bool], by: InstrumentedAttribute[Any]
) -> Annotation | None:
    """The dataset's annotation in `state` that is newest by `by`, if any."""
    query = select(Annotation).where(Annotation.dataset_id == dataset.id, state)
    return session.scalar(query.order_by(by.desc()).limit(1))


def undo(*, session: Session, dataset: Dataset) -> Annotation:
    latest = _newest(session, dataset, LIVE, Annotation.id)
    if latest is None:
        raise Conflict("nothing to undo: the dataset has no live annotations")
    latest.deleted_revision = _next_revision(session, dataset)
    latest.deleted_at = utcnow()
    _set_replaced_live(session, latest, live=True)  # undoing an edit brings the original back
    session.flush()
    return latest


def redo(*, session: Session, dataset: Dataset) -> Annotation:
    undone = _newest(session, dataset, REDOABLE, Annotation.deleted_revision)
    if undone is None:
        raise Conflict("nothing to redo")
    _next_revision(session, dataset)
    undone.deleted_at = None
    undone.deleted_revision = None
    _set_replaced_live(session, undone, live=False)
    session.flush()
    return undone


# An edit is a new annotation that names the one it replaces in its payload; the replaced one
# is soft-deleted (never on the redo stack) and comes back when the edit is undone.
REPLACES = "replaces"


def _set_replaced_live(session: Session, annotation: Annotation, *, live: bool) -> None:
    replaced_id = annotation.payload.get(REPLACES)
    replaced = session.get(Annotation, replaced_id) if replaced_id is not None else None
    if replaced is not None:
        replaced.deleted_at = None if live else utcnow()
        replaced.deleted_revision = None


def _live_annotation(session: Session, dataset: Dataset, annotation_id: int) -> Annotation:
    annotation = session.get(Annotation, annotation_id)
    if annotation is None or annotation.dataset_id != dataset.id:
        raise NotFound(f"dataset {dataset.id} has no annotation with id {annotation_id}")
    if annotation.deleted_at is not None:
        raise Conflict(f"annotation {annotation_id} is already deleted")
    return annotation


def _empty_redo_stack(session: Session, dataset: Dataset) -> None:
    session.execute(
        update(Annotation)
        .where(Annotation.dataset_id == dataset.id, REDOABLE)
        .values(deleted_revision=None)
    )


def delete_annotation(*, session: Session, dataset: Dataset, annotation_id: int) -> Annotation:
    """Soft-delete one annotation (any, not only the newest). A new act: it empties the redo
    stack; the row stays in the history (`include_deleted=true`)."""
    annotation = _live_annotation(session, dataset, annotation_id)
    _next_revision(session, dataset)
    _empty_redo_stack(session, dataset)
    annotation.deleted_at = utcnow()
    annotation.deleted_revision = None
    session.flush()
    return annotation


def edit_annotation(
    *,
    session: Session,
    dataset: Dataset,
    user: User,
    annotation_id: int,
    label: str | None,
    confidence: float | None,
) -> Annotation:
    """Rename a label (label and scribble annotations) or change a link's confidence: a new
    annotation replaces the old one in one revision; undo brings the old one back."""
    old = _live_annotation(session, dataset, annotation_id)
    if label is None and confidence is None:
        raise InvalidInput("nothing to change: give a new label or a new confidence")
    payload = {k: v for k, v in old.payload.items() if k != REPLACES}
    if label is not None:
        if "label" not in payload:
            raise InvalidInput(f"a {old.kind} annotation has no label to rename")
        payload["label"] = _label(label, "label")
    if confidence is not None and old.kind not in (MUST_LINK, CANNOT_LINK):
        raise InvalidInput("only must-link and cannot-link annotations take a confidence")
    revision = _next_revision(session, dataset)
    _empty_redo_stack(session, dataset)
    old.deleted_at = utcnow()
    old.deleted_revision = None
    new = Annotation(
        dataset_id=dataset.id,
        kind=old.kind,
        payload={**payload, REPLACES: old.id},
        confidence=old.confidence if confidence is None else confidence,
        revision=revision,
        author_id=user.id,
    )
    session.add(new)
    session.flush()
    return new


def live_ids(*, session: Session, dataset: Dataset) -> set[int]:
    """The ids of the dataset's live annotations: what a compilation must hold."""
    return set(
        session.scalars(select(Annotation.id).where(Annotation.dataset_id == dataset.id, LIVE))
    )


# More ids than this are not bound one by one (SQLite allows 32,766 parameters).
IDS_PER_QUERY = 10_000


def records(*, session: Session, dataset: Dataset, ids: set[int]) -> list[AnnotationRecord]:
    """These annotations of the dataset, in id order (a payload never changes: an edit is a new
    annotation). Many ids (a first compilation) are read as the live rows from the lowest on."""
    wanted = sorted(ids)
    columns = (Annotation.id, Annotation.kind, Annotation.payload, Annotation.confidence)
    mine = Annotation.dataset_id == dataset.id
    if len(wanted) > IDS_PER_QUERY:
        query = select(*columns).where(mine, LIVE, Annotation.id >= wanted[0])
        rows = [r for r in session.execute(query.order_by(Annotation.id)) if r.id in ids]
    else:
        query = select(*columns).where(mine, Annotation.id.in_(wanted))
        rows = list(session.execute(query.order_by(Annotation.id)))
    return [
        AnnotationRecord(id=r.id, kind=r.kind, payload=r.payload, confidence=r.confidence)
        for r in rows
    ]
