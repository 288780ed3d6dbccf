"""Which sources a session may read datasets from in place: the operator's IMPORT_SOURCES,
bound to the session factory as the array store is (`transactions.bind_store`), so the code
that reads a referenced dataset finds the options (credentials) of its prefix without them
ever being stored in the database or sent to a browser."""

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

_SOURCES = "import_sources"


def bind_sources(factory: sessionmaker[Session], sources: Mapping[str, Mapping[str, Any]]) -> None:
    info: dict[str, Any] = factory.kw.setdefault("info", {})
    info[_SOURCES] = {prefix: dict(options) for prefix, options in sources.items()}


def sources_of(session: Session) -> dict[str, dict[str, Any]]:
    """The prefixes datasets may be read from, with their fsspec options ({}: import is off)."""
    sources: dict[str, dict[str, Any]] = session.info.get(_SOURCES, {})
    return sources
