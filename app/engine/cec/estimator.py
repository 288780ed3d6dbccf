"""``CEC``: unsupervised cross-entropy clustering (Tabor & Spurek 2014) as a scikit-learn estimator.

A thin shell: it validates, calls ``fit_cec`` and stores the result. The energy minimised is
H(Y) + sum_i p_i H(N(m_i, S_i)) (eq. 2 of specs/cec-ib.md), in nats.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from app.engine.cec.chunked.chunked_cec import fit_chunked, predict_chunked
from app.engine.core.cec_fit import fit_cec
from app.engine.core.cec_shell import check_cec_settings, predict_components, store_gaussian_fit
from app.engine.core.chunked_input import is_dask_array
from app.engine.core.errstate import engine_errstate
from app.engine.core.projection import fit_space
from app.engine.core.validation import check_choice, check_partial_labels
from app.engine.progress import Progress

INITS = ("k-means++", "random")
POLISHES = (True, False, "full", "remove")


def check_polish(value: object) -> bool | str:
    """``polish`` as given, or ValueError."""
    if isinstance(value, bool) or value in ("full", "remove"):
        return value
    raise ValueError(f"polish must be True, False, 'full' or 'remove', got {value!r}")


# CEC-IB also starts from its labels (``label_seeding.py``).
LABELED_INITS = (*INITS, "labels")


class _CECBase(ClusterMixin, BaseEstimator):
    """Shared fit/predict of CEC and CEC-IB; subclasses define ``__init__`` and ``fit``."""

    n_clusters: int
    covariance: str
    min_cluster_fraction: float | str
    n_init: int
    max_iter: int
    init: str
    random_state: Any
    progress: Progress | None
    polish: bool | str
    inits: tuple[str, ...] = INITS

    def _fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None,
        beta: float,
        depth: int = 2,
        warm: NDArray[np.int64] | None = None,
        warm_enough: float | None = None,
    ) -> _CECBase:
        """The fit; ``depth``: calls between the user's ``fit`` and this one, plus one (so
        warnings point at the user's line); ``warm``: a partition to continue and
        ``warm_enough`` the label agreement that spares the fresh starts (``fit_cec``)."""
        settings = check_cec_settings(self, X)
        init = check_choice("init", self.init, self.inits)
        categories, n_categories = check_partial_labels(y, settings.data.shape[0])
        data = fit_space(self, settings.data, settings.family, depth=depth)
        result = fit_cec(
            data,
            categories,
            n_categories,
            n_clusters=settings.n_clusters,
            family=settings.family,
            beta=beta,
            min_cluster_fraction=settings.min_cluster_fraction,
            n_init=settings.n_init,
            max_iter=settings.max_iter,
            init=init,
            rng=check_random_state(self.random_state),
            progress=self.progress,
            warm=warm,
            polish=check_polish(self.polish),
            warm_enough=warm_enough,
        )
        store_gaussian_fit(self, result, max_iter=settings.max_iter, depth=depth)
        self.min_cluster_fraction_ = settings.min_cluster_fraction
        if warm is not None:
            self.warm_started_ = result.warm_started
        return self

    @engine_errstate
    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Cluster of each row by the CEC rule argmax_i p_i N(x; m_i, S_i) (eq. 1); on a
        ``dask.array.Array`` a dask array, computed chunk by chunk."""
        if is_dask_array(X):
            return predict_chunked(self, X)
        return predict_components(self, X)[1]


class CEC(_CECBase):
    """Cross-entropy clustering with Hartigan optimisation and automatic cluster removal.

    Parameters
    ----------
    n_clusters : initial (maximal) number of clusters; clusters are removed while fitting.
    covariance : Gaussian family, ``'full'``, ``'diagonal'`` or ``'spherical'``.
    min_cluster_fraction : a cluster with fewer than this fraction of the points is removed
        (also one too small for a non-singular covariance: d + 2 points for ``full``, else 3);
        ``'auto'``: 0.05, but at most 0.25 / n_clusters, so true clusters survive at large k
        (``min_cluster_fraction_`` is the value used).
    n_init : independent k-means++ starts; the lowest energy wins.
    max_iter : cap on Hartigan sweeps per start; ``converged_`` says whether it was reached.
    init : ``'k-means++'`` seeds (greedy: the best of 2 + ln k sampled candidates per seed, as
        scikit-learn's) with nearest-seed assignment, or ``'random'`` labels.
    random_state : seed, ``numpy.random.RandomState`` or None.
    progress : optional ``progress(iteration, energy) -> bool`` called after every sweep;
        returning False stops the fit and keeps the best consistent partition so far.
    polish : after each start, a descent over whole clusters (``cec_fit.py``): each cluster
        dissolved in turn, alone or with another one split in two along its principal axis,
        and Hartigan run on; a lower energy is kept. Hartigan moves one point at a time and
        cannot make these moves; on the paper's protocol (iris, wine, k = 6) they reach lower
        energies than 10 plain starts in 24 of 24 configurations (docs/cec-ib.md). Bounded
        to ``POLISH_POINT_RUNS`` point visits per fit, so it fades out on large data.
        ``'remove'``: only dissolving clusters (never more clusters than Hartigan left: what
        the API runs, since splits keep small, nearly singular clusters on wine; docs/cec-ib.md).

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
        min_cluster_fraction: float | str = "auto",
        n_init: int = 10,
        max_iter: int = 100,
        init: str = "k-means++",
        random_state: Any = None,
        progress: Progress | None = None,
        polish: bool | str = True,
    ) -> None:
        self.n_clusters = n_clusters
        self.covariance = covariance
        self.min_cluster_fraction = min_cluster_fraction
        self.n_init = n_init
        self.max_iter = max_iter
        self.init = init
        self.random_state = random_state
        self.progress = progress
        self.polish = polish

    @engine_errstate
    def fit(self, X: ArrayLike, y: object = None) -> CEC:
        """Cluster ``X``; ``y`` is ignored. On a ``dask.array.Array`` the fit runs
        data-parallel over its chunks on the current Dask scheduler (``app/engine/cec/chunked``;
        ``labels_`` is then a dask array)."""
        if is_dask_array(X):
            fit_chunked(self, X, None, beta=0.0)
            return self
        self._fit(X, None, beta=0.0)
        return self

    def fit_predict(self, X: ArrayLike, y: object = None, **kwargs: Any) -> NDArray[np.int64]:
        """``fit(X).labels_``."""
        return self.fit(X).labels_
