"""Degenerate features: CEC on the leading principal components when X's covariance is singular.

A Gaussian cost needs a non-singular covariance, and no cluster can have one when X as a whole
has not (constant or linearly dependent features, e.g. the always-blank border pixels of
scikit-learn's digits). The paper meets such data the same way: "PCA was used to reduce its
dimension to the 10 most informative components" (Sec. 5.6, the 4860 binary fingerprint
features; also Ecoli and Segmentation, Table 1). So the fit keeps the directions along which X
varies, at most ``MAX_COMPONENTS`` of them, and clusters there; see docs/cec-ib.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.decomposition import PCA

from app.engine.arrays import FloatArray
from app.engine.core.cec_fit import SingularDataError
from app.engine.core.families import family_entropy
from app.engine.fit_warnings import warn_fit

#: The paper's choice for its high-dimensional singular data (Sec. 5.6).
MAX_COMPONENTS = 10
# Principal variances below this fraction of the largest are rounding noise, not directions
# along which X varies (float64 keeps about 16 digits; the square root of that for variances).
RANK_RTOL = 1e-8


def covariance_is_singular(X: FloatArray, family: int) -> bool:
    """Whether one cluster holding all of X has an infinite cost in ``family`` (the engine's own
    test: a failed Cholesky factorisation, or a zero variance)."""
    d = X.shape[1]
    centred = X - X.mean(axis=0)
    cov = np.ascontiguousarray(centred.T @ centred / X.shape[0])
    return not np.isfinite(family_entropy(family, cov, np.zeros((d, d)), np.zeros((d, d))))


def principal_projection(X: FloatArray) -> PCA:
    """PCA onto the directions along which X varies, at most ``MAX_COMPONENTS``; a
    ``SingularDataError`` if all rows are (numerically) the same point."""
    variances = np.linalg.svd(X - X.mean(axis=0), compute_uv=False) ** 2
    rank = int(np.sum(variances > RANK_RTOL * variances[0])) if variances[0] > 0 else 0
    if rank == 0:
        raise SingularDataError("all rows of X are the same point, so no cluster has a finite cost")
    return PCA(n_components=min(rank, MAX_COMPONENTS), svd_solver="full").fit(X)


def fit_space(estimator: Any, data: FloatArray, family: int, *, depth: int = 1) -> FloatArray:
    """``data``, or its leading principal components when its covariance is singular (then
    ``estimator.projection_`` is that PCA, else None, and the fit warns). ``depth``: calls
    between the user's ``fit`` and this one, so the warning points at the user's line."""
    estimator.projection_ = None
    if not covariance_is_singular(data, family):
        return data
    estimator.projection_ = principal_projection(data)
    projected = np.ascontiguousarray(estimator.projection_.transform(data))
    warn_fit(
        estimator,
        f"the covariance of X is singular (constant or linearly dependent features), so "
        f"{type(estimator).__name__} clustered its {projected.shape[1]} leading principal "
        "components; means_ and covariances_ are in that space (projection_)",
        UserWarning,
        stacklevel=2 + depth,
    )
    return projected


def predict_space(estimator: Any, data: FloatArray) -> FloatArray:
    """Validated rows mapped as the fit mapped X (its ``projection_``, if any)."""
    projection = getattr(estimator, "projection_", None)
    return data if projection is None else np.ascontiguousarray(projection.transform(data))
