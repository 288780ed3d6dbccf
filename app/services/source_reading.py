"""A table imported by reference is registered from its metadata alone (the request answers at
once) and read in the background for what a dataset keeps of the whole table
(`source_summary.py`): the executor runs `read_imported_table` as the dataset's featurization,
so it has the same statuses (`featurizing` -> `ready` or `failed`), progress, fair turns and
recovery after a restart; its items exist once it is ready. A label column named at import is
read first (one column, as Arrow) and its labels become the importing user's label annotations,
one act, in the transaction that makes the dataset ready (`ingest/label_column.py`). A sync
that found the source changed is read the same way (`source_sync.read_synced_table`)."""

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from app.db.models import Dataset, User
from app.jobs.featurize.featurizer import InputRefused
from app.services.errors import ServiceError
from app.services.ingest.label_column import record_label_annotations
from app.services.source_labels import read_labels
from app.services.source_summary import forget_view, summarize_source
from app.services.source_sync import read_synced_table
from app.store.sources.allowed import SourceRefused
from app.store.sources.referenced import referenced_table
from app.store.sources.tables import SourceError
from app.store.views import delete_views


def read_imported_table(
    session: Session, dataset: Dataset, chunk_rows: int, progress: Callable[[float], None]
) -> dict[str, Any]:
    """Read the dataset's source once (`featurizer.TableReader`); a fault of the source (a NaN,
    a text value, a duplicate id, a label too long, an object changed or gone meanwhile) fails
    the dataset with a message naming the object, row and column (after a sync, the dataset
    is left as it was before it, with that message: `featurizer.execute_featurization`)."""
    try:
        if (dataset.featurization or {}).get("sync"):
            return read_synced_table(session, dataset, chunk_rows, progress)
        table = referenced_table(session, dataset)
        if table is None:
            raise InputRefused(f"dataset {dataset.id} was not imported by reference")
        # A view here can only be a read's cut short by a server that was killed: it goes.
        delete_views(session=session, dataset_id=dataset.id)
        session.commit()
        column = dataset.label_column
        labels = read_labels(table, column, progress) if column else None
        summary = summarize_source(session, dataset, table, chunk_rows, progress)
        if labels is not None:
            try:
                author = session.get(User, dataset.created_by_id) if dataset.created_by_id else None
                record_label_annotations(
                    session=session, dataset=dataset, user=author, labels=labels
                )
            except BaseException:
                forget_view(session, summary.view)
                raise
    except SourceRefused as exc:
        raise InputRefused(f"its source can no longer be read: {exc}") from None
    except SourceError as exc:
        raise InputRefused(str(exc)) from None
    except ServiceError as exc:  # the sink's refusals (duplicate ids, overflowing values)
        raise InputRefused(exc.detail) from None
    return summary.dataset_fields(dataset.meta)
