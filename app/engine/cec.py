"""``CEC``: unsupervised cross-entropy clustering (Tabor & Spurek 2014) as a scikit-learn estimator.

A thin shell: it validates, calls ``fit_cec`` and stores the result. The energy minimised is
H(Y) + sum_i p_i H(N(m_i, S_i)) (eq. 2 of specs/cec-ib.md), in nats.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from app.engine._cec_fit import fit_cec
from app.engine._density import assign_by_density
from app.engine._validation import (
    check_choice,
    check_int,
    check_partial_labels,
    check_real,
)
from app.engine.gaussian_families import FAMILIES, FULL

FloatArray = NDArray[np.float64]
Progress = Callable[[int, float], object]

INITS = ("k-means++", "random")


class _CECBase(ClusterMixin, BaseEstimator):
    """Shared fit/predict of CEC and CEC-IB; subclasses define ``__init__`` and ``fit``."""

    n_clusters: int
    covariance: str
    min_cluster_fraction: float
    n_init: int
    max_iter: int
    init: str
    random_state: Any
    progress: Progress | None

    def _fit(self, X: ArrayLike, y: ArrayLike | None, beta: float) -> _CECBase:
        data = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
        if not data.flags.writeable:
            data = data.copy()
        n, d = data.shape
        n_clusters = check_int("n_clusters", self.n_clusters, 1, n)
        family = FAMILIES[check_choice("covariance", self.covariance, list(FAMILIES))]
        fraction = check_real(
            "min_cluster_fraction", self.min_cluster_fraction, 0.0, 1.0, high_open=True
        )
        n_init = check_int("n_init", self.n_init, 1)
        max_iter = check_int("max_iter", self.max_iter, 1)
        init = check_choice("init", self.init, INITS)
        if self.progress is not None and not callable(self.progress):
            raise ValueError(f"progress must be a callable or None, got {self.progress!r}")
        if family == FULL and d >= n:
            raise ValueError(
                f"covariance='full' needs more samples than features, got n_samples={n} and "
                f"n_features={d}; reduce the dimension or use covariance='diagonal' or 'spherical'"
            )
        categories, n_categories = check_partial_labels(y, n)
        result = fit_cec(
            data,
            categories,
            n_categories,
            n_clusters=n_clusters,
            family=family,
            beta=beta,
            min_cluster_fraction=fraction,
            n_init=n_init,
            max_iter=max_iter,
            init=init,
            rng=check_random_state(self.random_state),
            progress=self.progress,
        )
        self.labels_ = result.labels
        self.n_clusters_ = int(result.weights.shape[0])
        self.energy_ = result.energy
        self.weights_ = result.weights
        self.means_ = result.means
        self.covariances_ = result.covariances
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.energy_history_ = result.energy_history
        if not result.converged and not result.cancelled:
            warnings.warn(
                f"{type(self).__name__} did not converge within max_iter={max_iter} sweeps; "
                "increase max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Cluster of each row by the CEC rule argmax_i p_i N(x; m_i, S_i) (eq. 1)."""
        check_is_fitted(self)
        data = validate_data(self, X, dtype=np.float64, reset=False)
        family = FAMILIES[self.covariance]
        return assign_by_density(data, self.weights_, self.means_, self.covariances_, family)


class CEC(_CECBase):
    """Cross-entropy clustering with Hartigan optimisation and automatic cluster removal.

    Parameters
    ----------
    n_clusters : initial (maximal) number of clusters; clusters are removed while fitting.
    covariance : Gaussian family, ``'full'``, ``'diagonal'`` or ``'spherical'``.
    min_cluster_fraction : a cluster with fewer than this fraction of the points is removed
        (also one too small for a non-singular covariance: d + 2 points for ``full``, else 3).
    n_init : independent k-means++ starts; the lowest energy wins.
    max_iter : cap on Hartigan sweeps per start; ``converged_`` says whether it was reached.
    init : ``'k-means++'`` seeds with nearest-seed assignment, or ``'random'`` labels.
    random_state : seed, ``numpy.random.RandomState`` or None.
    progress : optional ``progress(iteration, energy) -> bool`` called after every sweep;
        returning False stops the fit and keeps the best consistent partition so far.

    Fitted attributes: ``labels_``, ``n_clusters_``, ``energy_`` (nats), ``means_``,
    ``covariances_`` (shaped as in ``GaussianMixture``), ``weights_``, ``n_iter_``,
    ``converged_``, ``energy_history_`` (energy after each sweep of the kept start),
    ``n_features_in_``.
    """

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        covariance: str = "full",
        min_cluster_fraction: float = 0.05,
        n_init: int = 10,
        max_iter: int = 100,
        init: str = "k-means++",
        random_state: Any = None,
        progress: Progress | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.covariance = covariance
        self.min_cluster_fraction = min_cluster_fraction
        self.n_init = n_init
        self.max_iter = max_iter
        self.init = init
        self.random_state = random_state
        self.progress = progress

    def fit(self, X: ArrayLike, y: object = None) -> CEC:
        """Cluster ``X``; ``y`` is ignored."""
        self._fit(X, None, beta=0.0)
        return self

    def fit_predict(self, X: ArrayLike, y: object = None, **kwargs: Any) -> NDArray[np.int64]:
        """``fit(X).labels_``."""
        return self.fit(X).labels_
