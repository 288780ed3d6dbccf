"""Deep Zoom pyramids in the array store: every level of an image's picture (RGB, uint8) and
of a run's cluster mask (int32), each in square chunks of `CHUNK` pixels, so a viewer's tile
reads at most four chunks of one level (`app/engine/image/deep_zoom.py` has the levels)."""

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.store import chunks

CHUNK = 256  # a Deep Zoom tile with its overlap (254 + 2) spans at most two chunks a side
PICTURE = "picture_level_"  # + level: a dataset's picture
MASK = "mask_level_"  # + level: a run's cluster mask


def _kind(owner_is_run: bool, level: int) -> str:
    return f"{MASK if owner_is_run else PICTURE}{level}"


def write_levels(
    *,
    session: Session,
    levels: Iterable[tuple[int, NDArray[np.integer]]],
    dataset_id: int | None = None,
    run_id: int | None = None,
) -> None:
    """Every (level, pixels) of a dataset's picture, or of a run's mask when ``run_id``."""
    for level, pixels in levels:
        chunks.write_tiled(
            session=session,
            dataset_id=dataset_id,
            run_id=run_id,
            kind=_kind(run_id is not None, level),
            image=pixels,
            tile=CHUNK,
        )


def has_levels(
    *, session: Session, dataset_id: int | None = None, run_id: int | None = None
) -> bool:
    """Whether the pyramid is stored (its level 0, written last, is there)."""
    kind = _kind(run_id is not None, 0)
    return chunks.stored(session, dataset_id, kind, run_id) is not None


def read_level_region(
    *,
    session: Session,
    level: int,
    rows: tuple[int, int],
    columns: tuple[int, int],
    dataset_id: int | None = None,
    run_id: int | None = None,
) -> NDArray[np.integer] | None:
    """A region of one level, or None when that level is not stored."""
    return chunks.read_region(
        session=session,
        dataset_id=dataset_id,
        run_id=run_id,
        kind=_kind(run_id is not None, level),
        rows=rows,
        columns=columns,
    )
