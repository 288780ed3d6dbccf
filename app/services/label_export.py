"""One CSV of what the workspace shows: every item with its id, the expert's label and the
cluster of a chosen run (the workspace's "Labels & clusters" export)."""

from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.services import runs
from app.services.csv_export import csv_text
from app.services.errors import NotFound
from app.services.side_information import compile_for_dataset
from app.store.dataset_arrays import load_item_ids


def labels_and_clusters_csv(*, session: Session, dataset: Dataset, run_id: int | None) -> str:
    """Columns item, id, label, cluster (empty where an item has no label, or no run is given)."""
    clusters: list[object] | None = None
    if run_id is not None:
        run = session.get(Run, run_id)
        if run is None or run.dataset_id != dataset.id:
            raise NotFound(f"dataset {dataset.id} has no run with id {run_id}")
        result = runs.get_result(session=session, run=run)
        clusters = runs.result_labels(session=session, result=result).tolist()
    info = compile_for_dataset(session=session, dataset=dataset)
    names = info.label_names
    ids = load_item_ids(session=session, dataset=dataset)
    rows = (
        (
            i,
            ids[i],
            names[code] if code >= 0 else "",
            "" if clusters is None else clusters[i],
        )
        for i, code in enumerate(info.labels.tolist())
    )
    return csv_text(["item", "id", "label", "cluster"], rows)
