"""``C3L``: semi-supervised clustering with controlled leakage across a boundary (Smieja et al.).

The expert's two-category division arrives as one score per point, ``side_scores >= 0`` being
the positive category (from a drawn boundary, a classifier's decision function, or labels). The
data are embedded as z = (score, x) (spec c3l.md Sec. 1.3, the embedding for a general
discriminant), and every cluster is a product Gaussian N(mu, s^2) x N(m, S) whose 1-D factor puts
at most ``leakage`` of its mass across the boundary: the constrained fit is Theorem 1's closed
form (``_c3l_cost``), so there is no penalty weight to tune. ``leakage >= 0.5`` switches the
constraint off (plain CEC with the product family).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from app.engine.c3l.cost import leakage_quantile
from app.engine.c3l.fit import fit_c3l
from app.engine.core.cec_fit import MOVE_TOL, fit_cec
from app.engine.core.cec_shell import CECSettings, check_cec_settings, store_gaussian_fit
from app.engine.core.density import weighted_log_densities
from app.engine.core.errstate import engine_errstate
from app.engine.core.families import FAMILIES
from app.engine.core.projection import fit_space, predict_space
from app.engine.core.validation import check_choice, check_real
from app.engine.progress import Progress

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

INITS = ("side", "k-means++")


def check_side_scores(side_scores: ArrayLike, n_samples: int) -> NDArray[np.float64]:
    """One finite real score per sample."""
    try:
        arr = np.asarray(side_scores, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"side_scores must be real numbers: {error}") from None
    if arr.ndim != 1 or arr.shape[0] != n_samples:
        raise ValueError(
            f"side_scores must be a 1-D array with one score per sample ({n_samples}), got shape "
            f"{arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.nonzero(~np.isfinite(arr))[0][0])
        raise ValueError(f"side_scores must be finite; side_scores[{bad}] is {arr[bad]}")
    return arr


class C3L(ClusterMixin, BaseEstimator):
    """Cross-entropy clustering whose clusters respect a two-category boundary up to ``leakage``.

    Parameters
    ----------
    n_clusters : initial (maximal) number of clusters; clusters are removed while fitting.
    leakage : largest probability mass each cluster density may put on the other side of the
        boundary, in (0, 1); 0.5 or more means no constraint. Typical values 0.01-0.05.
    min_cluster_fraction : a cluster with fewer than this fraction of the points is removed
        (also one too small for a non-singular covariance).
    covariance : family of the factor on x, ``'full'``, ``'diagonal'`` or ``'spherical'``.
    n_init : restarts; the lowest energy wins.
    max_iter : cap on Hartigan sweeps per restart.
    init : ``'side'`` (clusters shared between the two sides, k-means++ within each) or
        ``'k-means++'`` on all points.
    random_state : seed, ``numpy.random.RandomState`` or None.
    progress : optional ``progress(iteration, energy) -> bool`` called after every sweep;
        returning False stops the fit and keeps the best consistent partition so far.

    Fitted attributes: ``labels_``, ``n_clusters_``, ``energy_`` (nats), ``leakage_`` (per
    cluster: mass of its fitted density across the boundary, <= ``leakage``), ``sides_`` (+1 or
    -1: the category of each cluster), ``weights_``, ``means_`` and ``covariances_`` (the X
    factor, shaped as in ``GaussianMixture``), ``side_means_`` and ``side_stds_`` (the
    constrained score factor N(mu, s^2)), ``n_iter_``, ``converged_``, ``energy_history_``,
    ``n_features_in_``. The four side attributes are None after a fit without side_scores.
    """

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        leakage: float = 0.05,
        min_cluster_fraction: float = 0.05,
        covariance: str = "full",
        n_init: int = 10,
        max_iter: int = 100,
        init: str = "side",
        random_state: Any = None,
        progress: Progress | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.leakage = leakage
        self.min_cluster_fraction = min_cluster_fraction
        self.covariance = covariance
        self.n_init = n_init
        self.max_iter = max_iter
        self.init = init
        self.random_state = random_state
        self.progress = progress

    @engine_errstate
    def fit(self, X: ArrayLike, y: object = None, *, side_scores: ArrayLike | None = None) -> C3L:
        """Cluster ``X``; ``side_scores[i] >= 0`` puts point i in the positive category.

        ``y`` is ignored: the scores are keyword-only (routable with ``set_fit_request``), so
        true labels can never leak in through ``y``. Without ``side_scores`` there is no
        boundary to respect and the fit is plain CEC on ``X`` (the side attributes are None).
        """
        settings = check_cec_settings(self, X)
        leakage = check_real("leakage", self.leakage, 0.0, 1.0, high_open=True)
        if leakage <= 0.0:
            raise ValueError("leakage must be > 0: no Gaussian has zero mass across a boundary")
        init = check_choice("init", self.init, INITS)
        data = fit_space(self, settings.data, settings.family)
        rng = check_random_state(self.random_state)
        if side_scores is None:
            self._fit_without_side(data, settings, rng)
            return self
        scores = check_side_scores(side_scores, settings.data.shape[0])
        result = fit_c3l(
            data,
            scores,
            n_clusters=settings.n_clusters,
            q=leakage_quantile(leakage),
            family=settings.family,
            min_cluster_fraction=settings.min_cluster_fraction,
            n_init=settings.n_init,
            max_iter=settings.max_iter,
            tol=MOVE_TOL,
            init=init,
            rng=rng,
            progress=self.progress,
        )
        self.leakage_: NDArray[np.float64] | None = result.leakage
        self.sides_: NDArray[np.int64] | None = result.sides
        self.side_means_: NDArray[np.float64] | None = result.side_means
        self.side_stds_: NDArray[np.float64] | None = result.side_stds
        store_gaussian_fit(self, result, max_iter=settings.max_iter)
        return self

    def _fit_without_side(
        self, data: NDArray[np.float64], settings: CECSettings, rng: np.random.RandomState
    ) -> None:
        """CEC on X alone: with no boundary the product family's side factor is absent."""
        result = fit_cec(
            data,
            np.full(data.shape[0], -1, dtype=np.int64),
            0,
            n_clusters=settings.n_clusters,
            family=settings.family,
            beta=0.0,
            min_cluster_fraction=settings.min_cluster_fraction,
            n_init=settings.n_init,
            max_iter=settings.max_iter,
            init="k-means++",
            rng=rng,
            progress=self.progress,
        )
        self.leakage_ = self.sides_ = self.side_means_ = self.side_stds_ = None
        store_gaussian_fit(self, result, max_iter=settings.max_iter, depth=2)

    @engine_errstate
    def predict(self, X: ArrayLike, *, side_scores: ArrayLike | None = None) -> NDArray[np.int64]:
        """Cluster of each row by the CEC rule for the product family fitted here:
        argmax_i p_i N(x; m_i, S_i) N(score; mu_i, s_i^2) (the side factor with its leakage
        constraint). Without ``side_scores`` the side factor is integrated out (it is a
        density in the score), leaving argmax_i p_i N(x; m_i, S_i): what a scorer in
        GridSearchCV, which passes only X to predict, gets."""
        check_is_fitted(self)
        data = predict_space(self, validate_data(self, X, dtype=np.float64, reset=False))
        family = FAMILIES[self.covariance]
        log_density = weighted_log_densities(
            data, self.weights_, self.means_, self.covariances_, family
        )
        if side_scores is not None:
            if self.side_means_ is None or self.side_stds_ is None:
                raise ValueError(
                    "this C3L was fitted without side_scores, so it has no side factor to "
                    "score them with; predict without side_scores"
                )
            scores = check_side_scores(side_scores, data.shape[0])
            z = (scores[:, None] - self.side_means_[None, :]) / self.side_stds_[None, :]
            log_density += -0.5 * z * z - np.log(self.side_stds_)[None, :] - HALF_LOG_2PI
        return np.asarray(log_density.argmax(axis=1), dtype=np.int64)

    def fit_predict(
        self, X: ArrayLike, y: object = None, *, side_scores: ArrayLike | None = None
    ) -> NDArray[np.int64]:
        """``fit(X, side_scores=side_scores).labels_``."""
        return self.fit(X, side_scores=side_scores).labels_
