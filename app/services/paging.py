"""Reading rows the same way everywhere: one by id (404 when missing), or one page of a query's
rows and how many rows it has in all."""

from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.services.errors import NotFound

Row = TypeVar("Row")


def page(
    session: Session, query: Select[Row], order: Any, limit: int, offset: int
) -> tuple[list[Row], int]:
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(order).limit(limit).offset(offset)).all()
    return list(rows), total


def get_or_not_found(session: Session, model: type[Row], row_id: int, noun: str) -> Row:
    row = session.get(model, row_id)
    if row is None:
        raise NotFound(f"no {noun} with id {row_id}")
    return row
