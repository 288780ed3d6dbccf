"""What every CEC-family estimator shell (CEC, CEC-IB, C4S, C3L) checks and reports alike.

The shells differ in their extra inputs (labels, constraints, side scores) and in the fit they
call; the data validation, the shared parameters, the convergence warning and the prediction by
the CEC rule live here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.density import assign_by_density
from app.engine.core.families import DENSITY_FAMILIES, FAMILIES, FULL
from app.engine.core.projection import predict_space
from app.engine.core.validation import check_choice, check_int, check_real
from app.engine.fit_warnings import reset_fit_warnings, warn_fit

AUTO_FRACTION = "auto"
# The removal threshold 'auto' never exceeds: the authors' example and R's CEC default.
PAPER_FRACTION = 0.05


def auto_min_cluster_fraction(n_clusters: int) -> float:
    """``min_cluster_fraction='auto'``: 5% (the paper's), but at most a quarter of the average
    share 1/k of k clusters. A fixed 5% removes true clusters whenever k >= 20: twenty equal
    blobs hold 5% each, and half of them dipped under the threshold on the way (CEC kept 8 or
    9 of 20); with a quarter of 1/k a cluster must shrink to a quarter of its fair share first.
    """
    return min(PAPER_FRACTION, 0.25 / n_clusters)


@dataclass(frozen=True)
class CECSettings:
    """Validated data and the parameters every CEC-family fit takes."""

    data: FloatArray  # C-contiguous, writeable float64 (n, d)
    n_clusters: int
    family: int
    min_cluster_fraction: float
    n_init: int
    max_iter: int


def check_cec_settings(
    estimator: Any, X: ArrayLike, families: Mapping[str, int] = FAMILIES
) -> CECSettings:
    """Validate X (sets ``n_features_in_``) and the shared parameters; ValueError otherwise.
    ``families``: the covariance names the estimator takes and their kernel families."""
    data = validate_data(estimator, X, dtype=np.float64, order="C", ensure_min_samples=2)
    reset_fit_warnings(estimator)
    if not data.flags.writeable:
        data = data.copy()
    n, d = data.shape
    n_clusters = check_int("n_clusters", estimator.n_clusters, 1, n)
    family = families[check_choice("covariance", estimator.covariance, list(families))]
    fraction = (
        auto_min_cluster_fraction(n_clusters)
        if isinstance(estimator.min_cluster_fraction, str)
        and estimator.min_cluster_fraction == AUTO_FRACTION
        else check_real(
            "min_cluster_fraction", estimator.min_cluster_fraction, 0.0, 1.0, high_open=True
        )
    )
    n_init = check_int("n_init", estimator.n_init, 1)
    max_iter = check_int("max_iter", estimator.max_iter, 1)
    if estimator.progress is not None and not callable(estimator.progress):
        raise ValueError(f"progress must be a callable or None, got {estimator.progress!r}")
    if family == FULL and d >= n:
        raise ValueError(
            f"covariance='full' needs more samples than features, got n_samples={n} and "
            f"n_features={d}; reduce the dimension or use covariance='diagonal' or 'spherical'"
        )
    return CECSettings(data, n_clusters, family, fraction, n_init, max_iter)


def store_gaussian_fit(estimator: Any, result: Any, *, max_iter: int, depth: int = 1) -> None:
    """Set the fitted attributes CEC, CEC-IB and C3L share from their fit's result, and warn if
    it used up max_iter (``depth`` as in ``warn_unless_converged``)."""
    estimator.labels_ = result.labels
    estimator.n_clusters_ = int(result.weights.shape[0])
    estimator.energy_ = result.energy
    estimator.weights_ = result.weights
    estimator.means_ = result.means
    estimator.covariances_ = result.covariances
    estimator.n_iter_ = result.n_iter
    estimator.converged_ = result.converged
    estimator.energy_history_ = result.energy_history
    warn_unless_converged(
        estimator,
        converged=result.converged,
        cancelled=result.cancelled,
        max_iter=max_iter,
        depth=depth + 1,
    )


def warn_unless_converged(
    estimator: Any, *, converged: bool, cancelled: bool, max_iter: int, depth: int = 1
) -> None:
    """The ConvergenceWarning of a fit that used up max_iter (not one the caller stopped).

    ``depth``: calls between the user's ``fit`` call and this one (1 when ``fit`` calls it), so
    the warning points at the user's line.
    """
    if not converged and not cancelled:
        warn_fit(
            estimator,
            f"{type(estimator).__name__} did not converge within max_iter={max_iter} sweeps; "
            "increase max_iter",
            ConvergenceWarning,
            stacklevel=2 + depth,
        )


def predict_components(estimator: Any, X: ArrayLike) -> tuple[FloatArray, IntArray]:
    """Validated X (in the fit's principal components if it set ``projection_``) and the fitted
    Gaussian picked for each row by the CEC rule argmax_i p_i N(x; m_i, S_i) (first index on
    ties)."""
    check_is_fitted(estimator)
    data = validate_data(estimator, X, dtype=np.float64, reset=False)
    data = predict_space(estimator, data)
    family = DENSITY_FAMILIES[getattr(estimator, "covariance_", estimator.covariance)]
    return data, assign_by_density(
        data, estimator.weights_, estimator.means_, estimator.covariances_, family
    )
