"""Reads of a dataset imported by reference, whose source is the user's and may change, go or
be closed by the operator at any time: such a failure is a 409 naming why, never a 500."""

from collections.abc import Callable
from typing import TypeVar

from app.db.models import Dataset
from app.services.errors import Conflict
from app.store.sources.allowed import SourceRefused
from app.store.sources.tables import SourceError

T = TypeVar("T")


class SourceUnreadable(Conflict):
    """A dataset read in place whose source changed, went or was closed since it was read."""


def read_in_place(dataset: Dataset, read: Callable[[], T]) -> T:
    """``read()`` of a dataset, its source's failures as SourceUnreadable (409) naming why."""
    try:
        return read()
    except (SourceError, SourceRefused) as exc:
        raise SourceUnreadable(
            f"dataset {dataset.id}'s source cannot be read as it was imported: {exc}; sync it "
            f"(POST /api/v1/datasets/{dataset.id}/sync) to read it as it is now"
        ) from None
