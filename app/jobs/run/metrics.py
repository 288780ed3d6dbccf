"""What a finished run is measured by: constraint satisfaction, and agreement with the ground
truth when the dataset has one."""

from dataclasses import asdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine import (
    adjusted_rand_index,
    label_constraint_satisfaction,
    normalized_mutual_info,
    pairwise_constraint_satisfaction,
)
from app.sideinfo import SideInformation


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def label_purity(labels: NDArray[np.integer], y: NDArray[np.integer]) -> float | None:
    """Fraction of labeled items whose cluster's majority label is their own label."""
    keep = y >= 0
    if not keep.any():
        return None
    _, clusters = np.unique(labels[keep], return_inverse=True)
    table = np.zeros((clusters.max() + 1, y.max() + 1), dtype=np.int64)
    np.add.at(table, (clusters, y[keep]), 1)
    return float(table.max(axis=1).sum() / keep.sum())


def cluster_labels(labels: NDArray[np.integer], info: SideInformation) -> list[str | None]:
    """Per cluster id, the label most of its labeled items carry (None: no labeled item), so a
    cluster mask can be read, or exported, as a label mask."""
    k = int(labels.max()) + 1 if labels.size and labels.max() >= 0 else 0
    known = (info.labels >= 0) & (labels >= 0)
    if not known.any() or not info.label_names:
        return [None] * k
    table = np.zeros((k, len(info.label_names)), dtype=np.int64)
    np.add.at(table, (labels[known], info.labels[known]), 1)
    return [info.label_names[int(row.argmax())] if row.any() else None for row in table]


def run_metrics(
    labels: NDArray[np.integer],
    info: SideInformation,
    ground_truth: NDArray[np.int32] | None,
) -> dict[str, Any]:
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=int)
    metrics: dict[str, Any] = {
        "n_clusters": int(np.count_nonzero(sizes)),
        "cluster_sizes": sizes.tolist(),
    }
    if len(info.must_link) or len(info.cannot_link):
        rates = pairwise_constraint_satisfaction(labels, info.must_link, info.cannot_link)
        metrics["pair_constraints"] = {k: _finite(v) for k, v in asdict(rates).items()}
    if info.n_labeled:
        rates = label_constraint_satisfaction(labels, info.labels)
        metrics["label_pairs"] = {k: _finite(v) for k, v in asdict(rates).items()}
        metrics["label_purity"] = label_purity(labels, info.labels)
    metrics["cluster_labels"] = cluster_labels(labels, info)
    if ground_truth is not None:
        known = ground_truth >= 0
        metrics["ari"] = adjusted_rand_index(ground_truth[known], labels[known])
        metrics["nmi"] = normalized_mutual_info(ground_truth[known], labels[known])
    return metrics
