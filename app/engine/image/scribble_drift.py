"""PPC on a scribbled image: how much the unscribbled items weigh, and when to stop them.

On an image PPC counts every unscribbled item in the M-step with a small weight (EM-lambda;
0.1 by default), so the mixture follows the image where the scribbles sample their classes
well: brick, grass and gravel textures, noisy shapes (bench_image, 5 tasks x 3 draws, mean mIoU
0.778 at 0.1 against 0.651 when the scribbles alone place the components).

It fails when the image shows an appearance no scribble covers. In bench_collection's
fluorescence fields the nuclei are ringed by a GFP halo; the scribbles, drawn well inside
their regions, never touch a ring, and the unscribbled rings pull the nucleus component onto
themselves: first-image mIoU 0.58-0.77, against 0.78-0.95 when the scribbles place the
components (three first images, ~64- and ~256-pixel superpixels; docs/ppc.md has the table).
Such a component has left its own scribbles: its mean lies 3.0 to 5.1 pooled standard
deviations from the mean of the items scribbled for it, where on every bench_image draw it
stayed within 0.8 to 1.8.

``ScribbleFaithfulFit`` measures that **drift** (the largest Mahalanobis distance, under the
components' pooled covariance, between a scribbled component's mean and its scribbled items'
mean) and, above ``DRIFT_LIMIT``, fits again with the unscribbled items together weighing
``FALLBACK_SHARE`` of the scribbled ones, which keeps the components on their scribbles (drift
0.41 at most in every case above) while the relations still smooth the labels. The second fit
is kept; the run's metrics say which fit was kept and both drifts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Pooled standard deviations a scribbled component's mean may move from its scribbled items'
# mean (measured: at most 1.84 on bench_image's 15 draws, at least 3.03 on the collections'
# ringed nuclei; the middle of the gap).
DRIFT_LIMIT = 2.5
# In the refit, the unscribbled items together weigh this share of the scribbled ones.
FALLBACK_SHARE = 0.01


def pooled_covariance(covariances: ArrayLike, weights: ArrayLike, n_features: int) -> NDArray:
    """The weight-averaged covariance of a mixture's components, as a full d x d matrix, from
    covariances shaped (k, d, d) full or tied, (k, d) diagonal or (k,) spherical."""
    cov = np.asarray(covariances, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    if cov.ndim == 3:
        return np.asarray(np.tensordot(w, cov, axes=1))
    if cov.ndim == 2:
        return np.diag(w @ cov)
    return float(w @ cov) * np.eye(n_features)


def _rows(x: Any, index: NDArray[np.int64]) -> NDArray[np.float64]:
    rows = x[index]
    compute = getattr(rows, "compute", None)  # a dask array (a slide's features)
    return np.asarray(compute() if compute is not None else rows, dtype=np.float64)


def scribble_drift(x: Any, labels: NDArray[np.int64], estimator: Any) -> float:
    """The largest Mahalanobis distance, under the pooled covariance, between the mean of a
    component that has labeled items and the mean of those items (0 when none is labeled)."""
    means = np.asarray(estimator.means_, dtype=np.float64)
    pooled = pooled_covariance(estimator.covariances_, estimator.weights_, means.shape[1])
    precision = np.linalg.pinv(pooled, hermitian=True)
    worst = 0.0
    for component in np.unique(labels[labels >= 0]):
        gap = means[component] - _rows(x, np.flatnonzero(labels == component)).mean(axis=0)
        worst = max(worst, float(np.sqrt(max(gap @ precision @ gap, 0.0))))
    return worst


class ScribbleFaithfulFit:
    """Fit ``make(unlabeled_weight)``; if its drift exceeds ``limit``, fit
    ``make(share * n_labeled / n_unlabeled)`` and keep that one (module docstring).

    ``make`` builds an unfitted PPC for a given ``unlabeled_weight``. Fitted attributes:
    ``best_estimator_`` (the kept fit), ``labels_`` (its labels) and ``choice_`` (the kept
    weight, each fit's drift and the limit, for the run's metrics)."""

    def __init__(
        self,
        make: Callable[[float], Any],
        unlabeled_weight: float,
        limit: float = DRIFT_LIMIT,
        share: float = FALLBACK_SHARE,
    ) -> None:
        if not 0.0 < unlabeled_weight <= 1.0:
            raise ValueError(f"unlabeled_weight must be in (0, 1], got {unlabeled_weight!r}")
        if not limit > 0.0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        if not 0.0 < share < 1.0:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.make = make
        self.unlabeled_weight = unlabeled_weight
        self.limit = limit
        self.share = share

    def fit(self, x: Any, *, labels: ArrayLike | None = None, **kwargs: Any) -> ScribbleFaithfulFit:
        first = self.make(self.unlabeled_weight)
        fit_kwargs = dict(kwargs) if labels is None else {**kwargs, "labels": labels}
        first.fit(x, **fit_kwargs)
        kept, drifts = first, {}
        known = None if labels is None else np.asarray(labels, dtype=np.int64)
        if known is not None and np.any(known >= 0) and np.any(known < 0):
            drift = scribble_drift(x, known, first)
            drifts[self.unlabeled_weight] = drift
            if drift > self.limit:
                n_labeled = int(np.count_nonzero(known >= 0))
                weight = min(self.share * n_labeled / (known.shape[0] - n_labeled), 1.0)
                if weight < self.unlabeled_weight:
                    second = self.make(weight)
                    second.fit(x, **fit_kwargs)
                    drifts[weight] = scribble_drift(x, known, second)
                    kept = second
        self.best_estimator_ = kept
        self.labels_ = kept.labels_
        self.choice_ = {
            "chosen": f"unlabeled_weight {kept.unlabeled_weight:.3g}",
            "unlabeled_weight": float(kept.unlabeled_weight),
            "scribble_drift": {f"{w:.3g}": round(d, 4) for w, d in drifts.items()},
            "drift_limit": self.limit,
        }
        return self
