"""Annotation use cases: validate and record an expert act, list, undo and redo.

Each act bumps the dataset's revision atomically. An act is one annotation, or a batch of them
sharing one revision: undo and redo take back and restore a whole act. Item sets are stored as
sorted, unique item indices (row positions 0..n_items-1), never expanded into pairs.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import ColumnElement, insert, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.db.base import utcnow
from app.db.models import Annotation, Dataset, User, View
from app.engine.image.strokes import check_strokes
from app.services.errors import Conflict, InvalidInput, NotFound, ServiceError
from app.services.item_ids import BY_ID, resolve_item_ids
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


def _items(dataset: Dataset, values: Sequence[int] | NDArray[np.integer], field: str) -> list[int]:
    """Sorted, unique item positions; ``values`` may be a numpy array (a label column's rows:
    no Python list of them made twice)."""
    if values is None or len(values) == 0:
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


def _checked_payload(
    *, session: Session, dataset: Dataset, kind: str, body: dict[str, Any], confidence: float | None
) -> dict[str, Any]:
    """The payload to store for one annotation whose items are row positions (422 if any of it
    does not fit the dataset). Single annotations and batches are checked alike."""
    payload = validate_payload(session=session, dataset=dataset, kind=kind, body=body)
    if confidence is not None and kind not in (MUST_LINK, CANNOT_LINK):
        raise InvalidInput("only must-link and cannot-link annotations take a confidence")
    return payload


def _new_act(session: Session, dataset: Dataset) -> int:
    """The revision of a new act; a new act empties the redo stack."""
    revision = _next_revision(session, dataset)
    _empty_redo_stack(session, dataset)
    return revision


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
    payload = _checked_payload(
        session=session, dataset=dataset, kind=kind, body=body, confidence=confidence
    )
    annotation = Annotation(
        dataset_id=dataset.id,
        kind=kind,
        payload=payload,
        confidence=confidence,
        revision=_new_act(session, dataset),
        author_id=user.id,
    )
    session.add(annotation)
    session.flush()
    return annotation


MAX_BATCH = 100_000


def batch_size_problem(count: int) -> str | None:
    """Why a batch of `count` annotations is refused, or None (the API's schema asks the same)."""
    if count > MAX_BATCH:
        return (
            f"a batch takes at most {MAX_BATCH:,} annotations, not {count:,}; send it as "
            "several batches (each is then its own act)"
        )
    if count < 1:
        return "a batch needs at least 1 annotation"
    return None


@dataclass(frozen=True)
class NewAnnotation:
    """One annotation of a batch, as the single route takes it."""

    kind: str
    body: dict[str, Any]
    confidence: float | None


@dataclass(frozen=True)
class Batch:
    ids: list[int]  # in the order the annotations were given
    revision: int


def create_annotations(
    *, session: Session, dataset: Dataset, user: User, annotations: Sequence[NewAnnotation]
) -> Batch:
    """Record many annotations as one act: each is checked as `create_annotation` checks one,
    all before any is written (a refusal names the annotation's index: `annotations[17]: ...`);
    then they share one new revision and are inserted in one statement."""
    problem = batch_size_problem(len(annotations))
    if problem:
        raise InvalidInput(problem)
    bodies = [a.body for a in annotations]
    positions, covered = _positions_of_ids(session, dataset, bodies)
    payloads = []
    for index, annotation in enumerate(annotations):
        try:
            body = annotation.body
            if _ids_named(body):
                if index < covered and not _names_positions_too(body):
                    body = _with_positions(body, positions)
                else:  # refused: the single route's check says why
                    body = resolve_item_ids(session=session, dataset=dataset, body=body)
            payloads.append(
                _checked_payload(
                    session=session,
                    dataset=dataset,
                    kind=annotation.kind,
                    body=body,
                    confidence=annotation.confidence,
                )
            )
        except ServiceError as exc:
            exc.detail = f"annotations[{index}]: {exc.detail}"
            exc.args = (exc.detail,)
            raise
    revision = _new_act(session, dataset)
    now = utcnow()
    rows = [
        {
            "dataset_id": dataset.id,
            "kind": annotation.kind,
            "payload": payload,
            "confidence": annotation.confidence,
            "revision": revision,
            "author_id": user.id,
            "created_at": now,
        }
        for annotation, payload in zip(annotations, payloads, strict=True)
    ]
    statement = insert(Annotation).returning(Annotation.id, sort_by_parameter_order=True)
    ids = list(session.scalars(statement, rows))
    return Batch(ids=ids, revision=revision)


def _ids_named(body: dict[str, Any]) -> list[str]:
    return [v for field in BY_ID for v in body.get(field) or ()]


def _names_positions_too(body: dict[str, Any]) -> bool:
    return any(body.get(BY_ID[f]) is not None for f in BY_ID if body.get(f) is not None)


def _with_positions(body: dict[str, Any], positions: dict[str, int]) -> dict[str, Any]:
    """`body` with its item ids replaced by their row positions, as `resolve_item_ids` does."""
    resolved = {k: v for k, v in body.items() if k not in BY_ID}
    for field, position_field in BY_ID.items():
        if body.get(field) is not None:
            resolved[position_field] = [positions[v] for v in body[field]]
    return resolved


def _positions_of_ids(
    session: Session, dataset: Dataset, bodies: list[dict[str, Any]]
) -> tuple[dict[str, int], int]:
    """The row positions of the item ids that the first `covered` bodies name, and `covered`:
    all the bodies, or those before the first whose ids the dataset refuses. The dataset's ids
    are read once for a batch (or a few times to find a refused body), not once per body."""

    def positions(end: int) -> dict[str, int] | None:
        wanted = list(dict.fromkeys(v for body in bodies[:end] for v in _ids_named(body)))
        if not wanted:
            return {}
        try:
            found = resolve_item_ids(session=session, dataset=dataset, body={"item_ids": wanted})
        except InvalidInput:
            return None
        return dict(zip(wanted, found["items"], strict=True))

    everything = positions(len(bodies))
    if everything is not None:
        return everything, len(bodies)
    # Bisect for the first refused body: bodies[:good] are accepted, bodies[:bad] are not.
    good, bad, known = 0, len(bodies), {}
    while bad - good > 1:
        middle = (good + bad) // 2
        found = positions(middle)
        if found is None:
            bad = middle
        else:
            good, known = middle, found
    return known, good


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


@dataclass(frozen=True)
class Act:
    """What an undo, redo or delete touched: an undo or redo, a whole act (one annotation, or
    a batch sharing one revision); `annotation` is the newest of them."""

    annotation: Annotation
    count: int


def undo(*, session: Session, dataset: Dataset) -> Act:
    """Soft-delete the newest act: every live annotation sharing the newest one's revision."""
    latest = _newest(session, dataset, LIVE, Annotation.id)
    if latest is None:
        raise Conflict("nothing to undo: the dataset has no live annotations")
    act = (Annotation.dataset_id == dataset.id, LIVE, Annotation.revision == latest.revision)
    revision = _next_revision(session, dataset)
    count = _update_all(session, act, deleted_at=utcnow(), deleted_revision=revision)
    # An edit is an act of its own (one annotation): undoing it brings the original back.
    _set_replaced_live(session, latest, live=True)
    session.flush()
    return Act(latest, count)


def redo(*, session: Session, dataset: Dataset) -> Act:
    """Restore the act undone last: every annotation its undo deleted."""
    undone = _newest(session, dataset, REDOABLE, Annotation.deleted_revision)
    if undone is None:
        raise Conflict("nothing to redo")
    act = (
        Annotation.dataset_id == dataset.id,
        Annotation.deleted_revision == undone.deleted_revision,
    )
    _next_revision(session, dataset)
    count = _update_all(session, act, deleted_at=None, deleted_revision=None)
    _set_replaced_live(session, undone, live=False)
    session.flush()
    return Act(undone, count)


def _update_all(session: Session, where: tuple[ColumnElement[bool], ...], **values: Any) -> int:
    """Set `values` on every annotation matching `where` in one UPDATE (a batch may hold
    100,000), and on those already loaded in the session; how many there were."""
    result = session.execute(update(Annotation).where(*where).values(**values))
    return int(result.rowcount)  # type: ignore[attr-defined]


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
