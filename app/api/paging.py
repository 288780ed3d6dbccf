"""`limit` and `offset`, the same on every list operation: at most `MAX_LIMIT` rows a page
(items of a dataset: `MAX_ITEMS_LIMIT`), `total` counts them all. A route takes them as one
`Paging` (or `ItemsPaging`) parameter; FastAPI publishes its fields as the query parameters."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

from app.api.schemas.common import Index

MAX_LIMIT = 1000
MAX_ITEMS_LIMIT = 10_000

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Rows a page, 1 to {MAX_LIMIT}")]
ItemsLimit = Annotated[
    int, Query(ge=1, le=MAX_ITEMS_LIMIT, description=f"Items a page, 1 to {MAX_ITEMS_LIMIT}")
]
Offset = Annotated[Index, Query(description="Rows to skip")]


@dataclass(frozen=True)
class PageQuery:
    limit: Limit = 100
    offset: Offset = 0


@dataclass(frozen=True)
class ItemsPageQuery:
    limit: ItemsLimit = 100
    offset: Offset = 0


Paging = Annotated[PageQuery, Depends()]
ItemsPaging = Annotated[ItemsPageQuery, Depends()]
