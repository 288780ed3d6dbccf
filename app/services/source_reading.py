"""A table imported by reference is registered from its metadata alone (the request answers at
once) and read in the background for what a dataset keeps of the whole table
(`source_summary.py`): the executor runs `read_imported_table` as the dataset's featurization,
so it has the same statuses (`featurizing` -> `ready` or `failed`), progress, fair turns and
recovery after a restart; its items exist once it is ready."""

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.jobs.featurize.featurizer import InputRefused
from app.services.errors import ServiceError
from app.services.source_summary import summarize_source
from app.store.sources.allowed import SourceRefused
from app.store.sources.referenced import referenced_table
from app.store.sources.tables import SourceError
from app.store.views import delete_views


def read_imported_table(
    session: Session, dataset: Dataset, chunk_rows: int, progress: Callable[[float], None]
) -> dict[str, Any]:
    """Read the dataset's source once (`featurizer.TableReader`); a fault of the source (a NaN,
    a text value, a duplicate id, an object changed or gone meanwhile) fails the dataset with
    a message naming the object, row and column."""
    try:
        table = referenced_table(session, dataset)
        if table is None:
            raise InputRefused(f"dataset {dataset.id} was not imported by reference")
        # A view here can only be a read's cut short by a server that was killed: it goes.
        delete_views(session=session, dataset_id=dataset.id)
        session.commit()
        summary = summarize_source(session, dataset, table, chunk_rows, progress)
    except SourceRefused as exc:
        raise InputRefused(f"its source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise InputRefused(str(exc)) from None
    except ServiceError as exc:  # the sink's refusals (duplicate ids, overflowing values)
        raise InputRefused(exc.detail) from None
    return summary.dataset_fields(dataset.meta)
