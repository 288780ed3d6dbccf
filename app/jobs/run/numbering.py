"""A fitted run numbers its clusters after the dataset's latest finished run.

The workspaces colour cluster c with palette entry c, and an expert re-runs after every few
annotations (live mode after every one). Numbered afresh, the same groups would come back in
new colours each time; numbered after the previous result (``engine.core.numbering``), a
cluster keeps its colour, its row in the table and its id in exports while it keeps most of
its items. The renumbering is a permutation, so nothing else about the result changes.

The run stores ``cluster_order`` (the fitted model's cluster c is stored as number
``cluster_order[c]``) so that a run applying its model to another image numbers its clusters
the same way, and ``numbered_like_run`` (the run it followed).
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Run
from app.engine.arrays import IntArray
from app.engine.core.numbering import numbering_like
from app.jobs.results.latest_run import latest_fitted
from app.store.run_arrays import read_labels


@dataclass(frozen=True)
class Reference:
    run_id: int
    labels: NDArray[np.int32]


def latest_fitted_result(session: Session, run: Run) -> Reference | None:
    """The dataset's most recently finished run that fitted a model itself (not one applying
    another run's model), other than ``run``, with its labels."""
    row = latest_fitted(session, run)
    if row is None:
        return None
    labels = read_labels(session=session, run_id=int(row[0]))
    return None if labels is None else Reference(int(row[0]), labels)


def order_like(labels: NDArray[np.integer], reference: Reference | None) -> IntArray | None:
    """The renumbering that follows ``reference``, or None when there is nothing to follow (no
    earlier run, or one over a different number of items, e.g. an image featurized anew)."""
    if reference is None or reference.labels.shape != labels.shape or not labels.size:
        return None
    return numbering_like(labels, reference.labels)


def extended(order: IntArray, size: int) -> IntArray:
    """``order`` over ``size`` clusters: numbers past its end (clusters a model has but that
    its fit left empty) keep their own number, which no renumbered cluster uses."""
    if size <= order.size:
        return order
    return np.concatenate([order, np.arange(order.size, size, dtype=np.int64)])


def renumbered(labels: NDArray[np.integer], order: IntArray) -> NDArray[np.int32]:
    """Each item's cluster number under ``order`` (negative labels: no cluster, kept)."""
    top = int(labels.max()) + 1 if labels.size else 0
    full = extended(order, top)
    out = np.where(labels >= 0, full[np.maximum(labels, 0)], labels)
    return np.asarray(out, dtype=np.int32)


def renumbered_params(params: dict[str, Any], order: IntArray) -> dict[str, Any]:
    """Per-cluster parameters (rows of ``weights``, ``means`` and ``covariances``) moved to
    their new numbers."""
    out = dict(params)
    for name in ("weights", "means", "covariances"):
        value = params.get(name)
        if not isinstance(value, list) or not value:
            continue
        full = extended(order, len(value))
        if full.size != len(value):
            continue  # more numbers than rows: not one row per cluster, leave it
        rows: list[Any] = [None] * len(value)
        for c, row in enumerate(value):
            rows[int(full[c])] = row
        out[name] = rows
    return out
