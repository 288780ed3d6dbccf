"""Shapes shared by every resource: pages and errors."""

from pydantic import BaseModel


class ErrorRead(BaseModel):
    detail: str
    code: str


class PageMeta(BaseModel):
    total: int
    limit: int
    offset: int


ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorRead} for status in (400, 401, 403, 404, 409, 413, 415, 422)
}
