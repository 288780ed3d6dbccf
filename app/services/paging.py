"""One page of a query's rows, and how many rows it has in all."""

from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

Row = TypeVar("Row")


def page(
    session: Session, query: Select[Row], order: Any, limit: int, offset: int
) -> tuple[list[Row], int]:
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(order).limit(limit).offset(offset)).all()
    return list(rows), total
