"""A run's frozen side information, kept once per content beside its dataset's arrays.

A run sees the annotations as they were when it was created, whatever is edited later. What it
saw is stored as one blob per distinct content (`side-information-<hash>` under the dataset's
directory), so the runs of an expert's loop on unchanged annotations share one blob, a run on a
dataset without annotations stores nothing, and the database holds a 32-character hash per run
instead of a copy (30 MB a run at 20M items, when the copy was in SQL). The blobs go with their
dataset."""

from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.sideinfo import SideInformation
from app.store import chunks
from app.store.side_information_blob import empty, encode, from_npz, is_empty

KIND_PREFIX = "side-information-"


def freeze(*, session: Session, dataset_id: int, info: SideInformation) -> str | None:
    """Keep ``info`` for a run of the dataset; its hash (for `Run.side_information_hash`), or
    None when it says nothing (no annotation)."""
    if is_empty(info):
        return None
    data, content = encode(info)
    kind = KIND_PREFIX + content
    if chunks.stored(session, dataset_id, kind) is None:
        chunks.write_blob(session=session, dataset_id=dataset_id, kind=kind, data=data)
    return content


def thaw(*, session: Session, run: Run) -> SideInformation:
    """The side information ``run`` was created with."""
    if run.side_information is not None:  # kept in the row itself, before blobs were shared
        return from_npz(run.side_information)
    if run.side_information_hash is None:
        dataset = session.get(Dataset, run.dataset_id)
        assert dataset is not None, f"run {run.id} has no dataset"
        return empty(dataset.n_items, run.annotation_revision)
    data = chunks.read_blob(
        session=session, dataset_id=run.dataset_id, kind=KIND_PREFIX + run.side_information_hash
    )
    if data is None:
        raise ValueError(f"run {run.id}'s side information is missing from the array store")
    return from_npz(data)
