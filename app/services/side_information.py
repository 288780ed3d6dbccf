"""Compile a dataset's live annotations into side information."""

import numpy as np
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.services import annotations, views
from app.services.datasets import require_ready
from app.services.strokes import drawn_on_image, resolve_strokes
from app.sideinfo import SideInformation, compile_side_information
from app.store.dataset_arrays import load_item_of_pixel


def compile_for_dataset(*, session: Session, dataset: Dataset) -> SideInformation:
    """The live annotations as side information; an image must be featurized (its strokes
    become the items under them)."""
    require_ready(dataset)
    records = annotations.live_records(session=session, dataset=dataset)
    if any(drawn_on_image(r) for r in records):
        item_of_pixel = load_item_of_pixel(session=session, dataset=dataset)
        records = resolve_strokes(records, item_of_pixel, dataset.n_items)

    def coordinates(view_id: int) -> np.ndarray:
        view = views.get_view(session=session, dataset=dataset, view_id=view_id)
        return views.view_coordinates(session=session, dataset=dataset, view=view)

    return compile_side_information(
        n_items=dataset.n_items,
        revision=dataset.revision,
        records=records,
        view_coordinates=coordinates,
    )
