"""Annotations may name items by the dataset's id column (`item_ids`, `item_ids_a`,
`item_ids_b`) instead of by row position; they are stored by position, like every other
annotation, so this is a translation at the door."""

from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.services.errors import InvalidInput
from app.store.dataset_arrays import load_item_ids

# Field naming items by id -> the field naming the same items by row position.
BY_ID = {"item_ids": "items", "item_ids_a": "items_a", "item_ids_b": "items_b"}
SHOWN_UNKNOWN = 5  # unknown ids quoted in the error


def resolve_item_ids(*, session: Session, dataset: Dataset, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with each `item_ids*` field replaced by the row positions of those ids (422 if
    any id is not in the dataset, so nothing is written)."""
    given = {field: body[field] for field in BY_ID if body.get(field) is not None}
    resolved = {k: v for k, v in body.items() if k not in BY_ID}
    if not given:
        return resolved
    if dataset.status != "ready" or dataset.n_items == 0:
        raise InvalidInput(f"dataset {dataset.id} has no items to annotate yet")
    position = {
        item_id: row for row, item_id in enumerate(load_item_ids(session=session, dataset=dataset))
    }
    for field, values in given.items():
        if resolved.get(BY_ID[field]) is not None:
            raise InvalidInput(f"give either {BY_ID[field]} or {field}, not both")
        unknown = [v for v in dict.fromkeys(values) if v not in position]
        if unknown:
            shown = ", ".join(repr(v) for v in unknown[:SHOWN_UNKNOWN])
            more = (
                f" and {len(unknown) - SHOWN_UNKNOWN} more" if len(unknown) > SHOWN_UNKNOWN else ""
            )
            source = (
                f"its id column {dataset.id_column!r}"
                if dataset.id_column
                else "no id column, so its ids are the row numbers 0 to "
                f"{dataset.n_items - 1} as text"
            )
            raise InvalidInput(
                f"{field}: dataset {dataset.id} has no item with id {shown}{more} (it has {source})"
            )
        resolved[BY_ID[field]] = [position[v] for v in values]
    return resolved
