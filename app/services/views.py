"""2-D views for scatterplots: PCA (made on import), any two features, or UMAP if installed."""

import importlib.util

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Dataset, View
from app.services.errors import InvalidInput, NotFound
from app.store import chunks
from app.store.views import pca_coordinates, store_view

__all__ = ["pca_coordinates", "store_view"]  # with the use cases below


def _feature_index(dataset: Dataset, feature: str | int, axis: str) -> int:
    if isinstance(feature, int):
        if 0 <= feature < dataset.n_features:
            return feature
        raise InvalidInput(
            f"{axis}: feature index {feature} is out of range 0..{dataset.n_features - 1}"
        )
    if feature in dataset.feature_names:
        return dataset.feature_names.index(feature)
    raise InvalidInput(f"{axis}: dataset {dataset.id} has no feature named {feature!r}")


def create_view(
    *,
    session: Session,
    dataset: Dataset,
    features: NDArray[np.floating],
    method: str,
    x: str | int | None,
    y: str | int | None,
    chunk_rows: int,
) -> View:
    if dataset.kind != "table":
        raise InvalidInput(f"dataset {dataset.id} has no features yet")
    if method == "features":
        if x is None or y is None:
            raise InvalidInput("a feature view needs both x and y")
        i, j = _feature_index(dataset, x, "x"), _feature_index(dataset, y, "y")
        coords = np.column_stack([features[:, i], features[:, j]])
        name = f"{dataset.feature_names[i]} vs {dataset.feature_names[j]}"
        params: dict[str, object] = {"x": dataset.feature_names[i], "y": dataset.feature_names[j]}
    elif method == "pca":
        coords, name, params = pca_coordinates(features), "PCA", {}
    elif method == "umap":
        if importlib.util.find_spec("umap") is None:
            raise InvalidInput(
                "UMAP views need the optional package umap-learn, not installed here"
            )
        import umap

        coords = umap.UMAP(n_components=2, random_state=0).fit_transform(features)
        name, params = "UMAP", {"n_neighbors": 15}
    else:
        raise InvalidInput(f"unknown view method {method!r}; use features, pca or umap")
    return store_view(
        session=session,
        dataset=dataset,
        name=name,
        method=method,
        params=params,
        coords=coords,
        chunk_rows=chunk_rows,
    )


def list_views(*, session: Session, dataset: Dataset) -> list[View]:
    return list(
        session.scalars(select(View).where(View.dataset_id == dataset.id).order_by(View.id))
    )


def get_view(*, session: Session, dataset: Dataset, view_id: int) -> View:
    view = session.get(View, view_id)
    if view is None or view.dataset_id != dataset.id:
        raise NotFound(f"dataset {dataset.id} has no view with id {view_id}")
    return view


def view_coordinates(*, session: Session, dataset: Dataset, view: View) -> NDArray[np.float32]:
    return chunks.read_array(
        session=session, dataset_id=dataset.id, kind=view.chunk_kind, dtype="float32", n_columns=2
    )
