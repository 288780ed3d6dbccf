"""`limit` and `offset`, the same on every list operation: at most `MAX_LIMIT` rows a page
(items of a dataset: `MAX_ITEMS_LIMIT`), `total` counts them all."""

from typing import Annotated, TypeVar

from fastapi import Query

from app.api.schemas.common import Index

MAX_LIMIT = 1000
MAX_ITEMS_LIMIT = 10_000

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Rows a page, 1 to {MAX_LIMIT}")]
Offset = Annotated[Index, Query(description="Rows to skip")]

Row = TypeVar("Row")


def window(rows: list[Row], limit: int, offset: int) -> list[Row]:
    """One page of a list the service returns whole (members, views, algorithms: a few)."""
    return rows[offset : offset + limit]
