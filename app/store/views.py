"""Stored 2-D views: a `View` row plus its coordinates (float32) in the array store."""

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Dataset, View
from app.store import chunks


def pca_coordinates(features: NDArray[np.floating]) -> NDArray[np.float32]:
    """The first two principal components (zeros where the data has fewer dimensions)."""
    centered = np.asarray(features, dtype=np.float64) - features.mean(axis=0)
    coords = np.zeros((len(features), 2), dtype=np.float32)
    if len(features) < 2:
        return coords
    from sklearn.decomposition import PCA

    k = min(2, features.shape[1], len(features))
    coords[:, :k] = PCA(n_components=k, svd_solver="auto", random_state=0).fit_transform(centered)
    return coords


def store_view(
    *,
    session: Session,
    dataset: Dataset,
    name: str,
    method: str,
    params: dict[str, object],
    coords: NDArray[np.floating],
    chunk_rows: int,
) -> View:
    view = View(dataset_id=dataset.id, name=name, method=method, params=params)
    session.add(view)
    session.flush()
    chunks.write_array(
        session=session,
        dataset_id=dataset.id,
        kind=view.chunk_kind,
        array=np.asarray(coords, dtype=np.float32),
        chunk_rows=chunk_rows,
    )
    return view


def delete_views(*, session: Session, dataset_id: int) -> None:
    """Every view of a dataset and its coordinates (when its items change)."""
    views = list(session.scalars(select(View).where(View.dataset_id == dataset_id)))
    chunks.delete_arrays(
        session=session, dataset_id=dataset_id, kinds=[view.chunk_kind for view in views]
    )
    for view in views:
        session.delete(view)
    session.flush()


def store_view_blocks(
    *,
    session: Session,
    view: View,
    blocks: Iterable[NDArray[np.float32]],
    chunk_rows: int,
) -> View:
    """The coordinates of ``view`` (a row already inserted) block by block (a streamed
    upload's PCA)."""
    with chunks.row_writer(
        session=session,
        dataset_id=view.dataset_id,
        kind=view.chunk_kind,
        n_columns=2,
        dtype="float32",
        chunk_rows=chunk_rows,
    ) as writer:
        for block in blocks:
            writer.append(block)
    return view
