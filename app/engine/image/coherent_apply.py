"""Applying a fitted CEC-family model to another image: with its clusters' own covariances, or
with their pooled covariance, whichever segments the new image more coherently.

A cluster's covariance is fitted on the crop of texture that one image shows; on another image
of the same kind the class looks alike in the mean but its spread differs, and a tight
covariance (brick, fitted on one crop) then loses pixels to a broad one (gravel). Sharing one
covariance (the weighted mean of the clusters', as linear discriminant analysis pools them)
draws linear boundaries between the means, which carry from image to image; but where the
clusters really differ in shape the fitted covariances segment better. The new image says which:
the same coherence rule as ``MostCoherentFit`` (neighbour links told apart; the fitted model is
kept unless pooling disagrees on at least 20 % fewer of them).

Measured (benchmarks/bench_image.py, CEC-IB fitted with the image defaults, then applied to a
second image of the same kind; mIoU, fitted -> pooled): silhouette brick/gravel 0.61 -> 0.89
(pooling: 41 % fewer disagreeing links), mosaic-3 0.40 -> 0.39 (43 % fewer); kept as fitted:
mosaic-2 (pooled 0.56, but three times the disagreement), silhouette gravel/grass (0.79; pooled
0.70, 19 % fewer: under the margin).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.engine.image.coherent_choice import most_coherent

FITTED = "fitted covariances"
POOLED = "pooled covariance"


def with_pooled_covariance(estimator: Any) -> Any:
    """A copy of a fitted CEC-family estimator (``weights_``, ``covariances_`` in its family's
    shape: (k, d, d), (k, d) or (k,)) whose every cluster has the weighted mean covariance."""
    pooled = copy.copy(estimator)
    covariances = np.asarray(estimator.covariances_, dtype=np.float64)
    weights = np.asarray(estimator.weights_, dtype=np.float64)
    mean = np.tensordot(weights / weights.sum(), covariances, axes=1)
    pooled.covariances_ = np.ascontiguousarray(np.broadcast_to(mean, covariances.shape))
    return pooled


def coherent_apply(
    estimator: Any,
    X: ArrayLike,
    pairs: NDArray[np.int64],
    weights: NDArray[np.float64],
    margin: float = 0.2,
) -> tuple[Any, NDArray[np.int64], dict[str, Any]]:
    """The model to apply (as fitted, or pooled), its labels of ``X``, and the choice made (the
    kept name and each variant's neighbour disagreement, for the run's metrics)."""
    pooled = with_pooled_covariance(estimator)
    models = [estimator, pooled]
    labelings = [np.asarray(model.predict(X), dtype=np.int64) for model in models]
    index, scores = most_coherent(labelings, pairs, weights, margin)
    names = [FITTED, POOLED]
    disagreement = dict(zip(names, scores, strict=True))
    choice = {"chosen": names[index], "neighbour_disagreement": disagreement}
    return models[index], labelings[index], choice
