"""Degenerate features: CEC on the leading principal components when X's covariance is singular.

A Gaussian cost needs a non-singular covariance, and no cluster can have one when X as a whole
has not (constant or linearly dependent features, e.g. the always-blank border pixels of
scikit-learn's digits). The paper meets such data the same way: "PCA was used to reduce its
dimension to the 10 most informative components" (Sec. 5.6, the 4860 binary fingerprint
features; also Ecoli and Segmentation, Table 1). So the fit keeps the directions along which X
varies, at most ``MAX_COMPONENTS`` of them, and clusters there; see docs/cec-ib.md.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.decomposition import PCA

from app.engine.core.cec_fit import SingularDataError
from app.engine.core.families import family_entropy

FloatArray = NDArray[np.float64]

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
