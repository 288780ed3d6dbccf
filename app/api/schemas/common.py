"""Shapes shared by every resource: pages, errors, and the bounded integers and names that path,
query and body parameters use, so the published schema refuses what the server refuses."""

from collections.abc import Sequence
from typing import Annotated, Any, Protocol, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic_core import PydanticCustomError

# Every integer the API takes is bounded, so that a value SQL or NumPy cannot hold is refused
# (422) before it reaches them. Ids are INTEGER columns, 32-bit on PostgreSQL: a larger id names
# nothing. Offsets and item positions are 64-bit in SQL and NumPy; they stop at 2**53 - 1
# (JavaScript's Number.MAX_SAFE_INTEGER) so that every JSON client reads the bound, and every
# value under it, exactly (FastAPI publishes schema bounds as floats: 2**63 - 1 reads as 2**63).
MAX_ID = 2**31 - 1
MAX_INT = 2**53 - 1


def _json_integer(value: object) -> object:
    # JSON Schema counts 5.0 as an integer; request bodies are otherwise strict (`RequestBody`).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Id = Annotated[int, Field(ge=1, le=MAX_ID), BeforeValidator(_json_integer)]
"""A database id: a path id (`project_id`, `run_id`...) or an id in a request body."""

Index = Annotated[int, Field(ge=0, le=MAX_INT), BeforeValidator(_json_integer)]
"""A non-negative position or count: `offset`, an item's row position."""

MAX_PIXELS_A_SIDE = 10_000_000
Pixel = Annotated[int, Field(ge=0, le=MAX_PIXELS_A_SIDE), BeforeValidator(_json_integer)]
"""A pixel coordinate of an image's full resolution (x or y)."""

Pixels = Annotated[int, Field(ge=1, le=MAX_PIXELS_A_SIDE), BeforeValidator(_json_integer)]
"""A length in pixels: a width or a height (at least one)."""

FiniteFloat = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""A JSON number; NaN and infinities (which Python's JSON parser accepts) are refused."""

# A name the server keeps after trimming surrounding whitespace must hold at least one character
# that is neither whitespace nor a control character, and no NUL anywhere (databases refuse NUL
# in text). The pattern is what the schema publishes (anchored: JSON Schema `pattern` searches);
# the validators below check the same in Python and say what is wrong in words.
NAME_PATTERN = r"^[^\x00]*[^\s\x00-\x1f][^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "must not contain NUL characters")
    return value


def _not_blank(value: str) -> str:
    if value and not any(ch >= " " and not ch.isspace() for ch in value):
        raise PydanticCustomError(
            "blank", "must not be blank (only whitespace or control characters)"
        )
    return value


Name = Annotated[
    str,
    Field(min_length=1, json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
]
"""A name or label that is not blank once trimmed; give `max_length` per field."""

OptionalName = Annotated[
    str,
    Field(json_schema_extra={"pattern": f"^$|{NAME_PATTERN}"}),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
]
"""A name, or empty for "not given" (as HTML forms send blank fields)."""

Text = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL_PATTERN}), AfterValidator(_no_nul)]
"""Free text (may be empty) without NUL characters."""


class RequestBody(BaseModel):
    """Base of JSON request bodies: each value must have the JSON type the schema gives it (no
    "5" for 5, no 0 for false), so the server refuses what the published schema refuses. JSON
    has no tuples: fixed-length arrays are declared `Strict(False)` with strict items."""

    model_config = ConfigDict(strict=True)


class FieldError(BaseModel):
    """One place where a request did not match the schema."""

    loc: str = Field(description="Dotted path to the value, e.g. `items.0` or `limit`")
    msg: str


class ErrorRead(BaseModel):
    """Every 4xx and 5xx answer of the API has this shape (`code` is stable, `detail` is for
    people). The optional fields appear only where they say something."""

    detail: str
    code: str = Field(
        description="bad_request, not_authenticated, forbidden, cross_site_request, not_found, "
        "method_not_allowed, conflict, payload_too_large, unsupported_media_type, "
        "invalid_input, too_many_requests or internal_error"
    )
    errors: list[FieldError] | None = Field(
        None, description="422 from schema validation: each value that did not match"
    )
    retry_after: int | None = Field(None, description="429: seconds to wait (as Retry-After)")
    conflicts: list[dict[str, Any]] | None = Field(
        None, description="409 on runs-create: the contradicting annotations"
    )


class Window(Protocol):
    @property
    def limit(self) -> int: ...
    @property
    def offset(self) -> int: ...


class Page(BaseModel):
    """A list operation's answer. Subclasses declare `items` (first, so the published schema
    lists it first) and `total`, `limit`, `offset`."""

    @classmethod
    def of(cls, rows: Sequence[object], total: int, page: Window, **extra: object) -> Self:
        """The page of `rows` (ORM objects or models, one page already), `total` in all."""
        body = {"items": rows, "total": total, "limit": page.limit, "offset": page.offset}
        return cls.model_validate(body | extra, from_attributes=True)

    @classmethod
    def window(cls, rows: Sequence[object], page: Window) -> Self:
        """One page of a list the service returns whole (members, views, algorithms: a few)."""
        return cls.of(rows[page.offset : page.offset + page.limit], len(rows), page)


# Routers declare these so FastAPI registers `ErrorRead`; the published document then keeps, per
# operation, only the statuses it can return (app/api/openapi.py works them out).
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorRead} for status in (400, 401, 403, 404, 409, 413, 415, 422)
}
# For the routes that limit how often or how much (with a Retry-After header).
RATE_LIMITED: dict[int | str, dict[str, object]] = {429: {"model": ErrorRead}}


class DatasetPartRead(BaseModel):
    """Read from the ORM: something that belongs to a dataset (an annotation, a view, a run)."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    dataset_id: int


def one_of_groups(*groups: tuple[str, ...]) -> dict[str, Any]:
    """Publish "exactly one of these groups of fields, and none of the others'" (checked by the
    model's validator too). The fields are optional but not nullable in the published schema
    (`SkipJsonSchema[None]`): a null would count as given there and as absent here."""
    fields = [name for group in groups for name in group]
    return {
        "oneOf": [
            {
                "required": list(group),
                "not": {"anyOf": [{"required": [f]} for f in fields if f not in group]},
            }
            for group in groups
        ]
    }


Groups = tuple[tuple[str, ...], ...]


def given_group(model: BaseModel, groups: Groups, message: str) -> None:
    """The validator behind `one_of_groups`: one group's fields all given, no other group's."""
    given = {name for group in groups for name in group if getattr(model, name) is not None}
    if not any(given == set(group) for group in groups):
        raise ValueError(message)
