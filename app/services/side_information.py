"""Compile a dataset's live annotations into side information."""

import numpy as np
from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.services import annotations, views
from app.sideinfo import SideInformation, compile_side_information


def compile_for_dataset(*, session: Session, dataset: Dataset) -> SideInformation:
    records = annotations.live_records(session=session, dataset=dataset)

    def coordinates(view_id: int) -> np.ndarray:
        view = views.get_view(session=session, dataset=dataset, view_id=view_id)
        return views.view_coordinates(session=session, dataset=dataset, view=view)

    return compile_side_information(
        n_items=dataset.n_items,
        revision=dataset.revision,
        records=records,
        view_coordinates=coordinates,
    )
