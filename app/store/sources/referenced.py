"""A dataset imported by reference: what its row keeps of the source (``meta.source``: the URL,
format, columns and each object's rows, size and version) and the table read in place from it.

Options (credentials) are never kept with the dataset: they are looked up from the operator's
IMPORT_SOURCES at every read, so closing a prefix stops its datasets being read."""

from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.store.sources.allowed import AllowedSource, allowed_source
from app.store.sources.binding import sources_of
from app.store.sources.images import IMAGE_FORMATS, SourceImage
from app.store.sources.tables import SourceFile, SourceTable


def source_record(allowed: AllowedSource, table: SourceTable) -> dict[str, Any]:
    """What ``meta.source`` keeps: enough to read the table again and to see it changed."""
    return {
        "url": allowed.url,
        "format": table.format,
        "columns": list(table.columns),
        "dtype": table.dtype,
        "n_rows": table.n_rows,
        "files": [f.record() for f in table.files],
    }


def is_referenced(dataset: Dataset) -> bool:
    return bool((dataset.meta or {}).get("source"))


def referenced_table(session: Session, dataset: Dataset) -> SourceTable | None:
    """The dataset's features read in place, or None when they are in the store. Raises
    SourceRefused when the operator no longer allows its prefix."""
    record = (dataset.meta or {}).get("source")
    if not record or record.get("format") in IMAGE_FORMATS:
        return None
    return table_of(session, record)


def table_of(session: Session, record: dict[str, Any]) -> SourceTable:
    """The table a ``meta.source`` record describes (a sync's, before it is the dataset's).
    Raises SourceRefused when the operator no longer allows its prefix."""
    allowed = allowed_source(record["url"], sources_of(session))
    return SourceTable(
        protocol=allowed.protocol,
        options=allowed.options,
        format=record["format"],
        files=tuple(SourceFile.from_record(f) for f in record["files"]),
        columns=tuple(record["columns"]),
        dtype=record["dtype"],
        n_rows=int(record["n_rows"]),
    )


def changed_objects(table: SourceTable) -> list[str]:
    """The source's objects that changed (or went) since they were recorded."""
    recorded = {f.url: f.version for f in table.files}
    return [url for url, now in table.current_versions() if now != recorded.get(url)]


def referenced_image(session: Session, dataset: Dataset) -> SourceImage | None:
    """The dataset's image read in place (a slide imported by reference), or None. Raises
    SourceRefused when the operator no longer allows its prefix."""
    record = (dataset.meta or {}).get("source")
    if not record or record.get("format") not in IMAGE_FORMATS:
        return None
    allowed = allowed_source(record["url"], sources_of(session))
    return SourceImage.from_record(allowed.protocol, allowed.options, record)
