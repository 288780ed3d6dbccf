"""``C4S``: constrained clustering with a complex cluster structure (Smieja & Wiercioch).

Hard must-link and cannot-link constraints on top of the CEC core (spec c4s.md Sec. 3.1):

1. must-links are closed transitively into initial chunklets (``_c4s_constraints``);
2. each chunklet is split by CEC on its own points into final chunklets (``_c4s_items``);
3. global CEC moves final chunklets and free points as blocks, with exact moment merge/split,
   taking only moves that keep every cannot-link satisfiable (``_c4s_global``, ``_c4s_validity``);
4. clusters sharing an initial chunklet are merged (closure cl^inf), so an output group is a
   union of Gaussian clusters.

Restarts repeat steps 2-3 and keep the lowest pre-merge CEC cost (eq. 4), which is ``energy_``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from app.engine.arrays import FloatArray, IntArray
from app.engine.c4s.auto_covariance import AUTO_FAMILIES, constraint_agreement
from app.engine.c4s.constraints import (
    Chunklets,
    aggregate,
    check_pairs,
    dense_by_first_occurrence,
    merge_clusters,
)
from app.engine.c4s.feasibility import require_colouring
from app.engine.c4s.global_search import GlobalRun, run_global
from app.engine.c4s.items import build_items
from app.engine.c4s.tied_spherical import (
    ROUNDS,
    pooled_variance,
    settled,
    start_variance,
    tied_cost,
)
from app.engine.c4s.validity import new_graph
from app.engine.core.cec_fit import MOVE_TOL, min_cluster_size
from app.engine.core.cec_shell import (
    CECSettings,
    check_cec_settings,
    predict_components,
    warn_unless_converged,
)
from app.engine.core.errstate import engine_errstate
from app.engine.core.families import FAMILIES, SPHERICAL, UNIT
from app.engine.core.fitted_gaussians import partition_gaussians
from app.engine.core.projection import fit_space
from app.engine.core.validation import check_int
from app.engine.progress import Progress

# the families C4S fits; tied_spherical runs the kernels' fixed unit family on rescaled data
C4S_FAMILIES = {**FAMILIES, "tied_spherical": UNIT}


class Search(NamedTuple):
    """The best restart of one C4S search: its run, the Gaussian cluster of each point, the
    iteration count so far, whether the caller cancelled, and the shared variance it used
    (tied_spherical; 1 otherwise)."""

    run: GlobalRun
    clusters: IntArray
    iterations: int
    cancelled: bool
    variance: float


class C4S(ClusterMixin, BaseEstimator):
    """C4s clustering with hard must-link / cannot-link constraints.

    Parameters
    ----------
    n_clusters : initial (maximal) number of Gaussian clusters of the global stage (the paper's
        ``gr``, e.g. 3 x the expected number of groups); the output has at most this many groups.
    n_chunklet_clusters : initial number of clusters of the CEC that splits each must-link
        chunklet (the paper's ``gr_i``).
    min_cluster_fraction : CEC removal threshold, for the global stage relative to all points and
        for a chunklet split relative to the chunklet (paper: 1%); a cluster is also removed
        below the size that keeps its covariance non-singular (d + 2 points for ``full``).
    covariance : Gaussian family, ``'full'``, ``'diagonal'``, ``'spherical'``,
        ``'tied_spherical'`` (spherical clusters sharing one variance, the k-means model with
        CEC's entropy term; ``tied_spherical.py``), or ``'auto'``: with constraints, fit full and
        tied spherical and keep the one whose fitted Gaussians agree with more constraints
        (``auto_covariance.py``); without, full. ``covariance_`` is the family
        fitted.
    n_init : restarts (inner split and global stage); the lowest pre-merge cost wins.
    max_iter : cap on global Hartigan sweeps per restart (and on sweeps of each chunklet split).
    random_state : seed, ``numpy.random.RandomState`` or None.
    progress : optional ``progress(iteration, energy) -> bool`` called after every global sweep;
        returning False stops the fit with a valid, merged partition.

    Fitted attributes: ``labels_`` (merged groups; every constraint holds), ``n_clusters_``
    (number of groups), ``energy_`` (pre-merge CEC cost, nats; for ``tied_spherical`` the tied
    cost of ``tied_spherical.py``), ``cluster_labels_`` (pre-merge
    Gaussian cluster of each point), ``weights_``, ``means_``, ``covariances_`` (of those
    Gaussian clusters, shaped as in ``GaussianMixture``), ``cluster_groups_`` (the group of each
    Gaussian cluster), ``n_iter_``, ``converged_``, ``energy_history_``, ``n_features_in_``,
    ``covariance_`` and, for ``'auto'``, ``covariance_agreement_`` (constraints each family's
    Gaussians agree with).
    """

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        n_chunklet_clusters: int = 4,
        min_cluster_fraction: float = 0.01,
        covariance: str = "full",
        n_init: int = 10,
        max_iter: int = 50,
        random_state: Any = None,
        progress: Progress | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.n_chunklet_clusters = n_chunklet_clusters
        self.min_cluster_fraction = min_cluster_fraction
        self.covariance = covariance
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state
        self.progress = progress

    @engine_errstate
    def fit(
        self,
        X: ArrayLike,
        y: object = None,
        *,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
    ) -> C4S:
        """Cluster ``X`` under the (m, 2) index arrays ``must_link`` and ``cannot_link``; ``y`` is
        ignored (constraints are keyword-only and routable, see app/engine/side_info.py)."""
        if self.covariance == "auto":
            return self._fit_auto(X, must_link, cannot_link)
        settings = check_cec_settings(self, X, families=C4S_FAMILIES)
        family = settings.family
        # Singular X (e.g. digits' blank border pixels): its leading principal components, as
        # CEC and C3L do; otherwise no cluster has a finite cost and `predict` cannot factor one.
        data = fit_space(self, settings.data, family, depth=2)
        n = data.shape[0]
        n_parts = check_int("n_chunklet_clusters", self.n_chunklet_clusters, 1)
        ml = check_pairs("must_link", must_link, n)
        cl = check_pairs("cannot_link", cannot_link, n)
        chunklets = aggregate(n, ml, cl)
        colour = require_colouring(
            chunklets.chunk, chunklets.neg_ptr, chunklets.neg_idx, cl, settings.n_clusters
        )
        rng = check_random_state(self.random_state)
        if family == UNIT:
            search, variance = self._tied_search(data, settings, n_parts, chunklets, colour, rng)
        else:
            search = self._search(data, settings, n_parts, chunklets, colour, rng, 0)
            variance = None
        labels = _merged_groups(search.clusters, chunklets, ml, cl, settings.n_clusters)
        self.labels_ = labels
        self.n_clusters_ = int(labels.max()) + 1
        self.cluster_labels_ = dense_by_first_occurrence(search.clusters)
        self._store_gaussians(data, family, search, variance)
        groups = np.empty(self.weights_.shape[0], dtype=np.int64)
        groups[self.cluster_labels_] = labels  # every point of a Gaussian is in one group
        self.cluster_groups_ = groups
        self.n_iter_ = search.run.n_iter
        self.converged_ = search.run.converged
        self.covariance_ = self.covariance
        warn_unless_converged(
            self, converged=search.run.converged, cancelled=search.cancelled,
            max_iter=settings.max_iter,
        )  # fmt: skip
        return self

    def _store_gaussians(
        self, data: FloatArray, family: int, search: Search, variance: float | None
    ) -> None:
        """The fitted Gaussian clusters (``weights_``, ``means_``, ``covariances_``) and the
        cost (``energy_``, ``energy_history_``): the search's own, or for ``tied_spherical``
        (``variance`` given) the tied model's at that shared variance."""
        d = data.shape[1]
        if variance is None:
            self.energy_ = search.run.energy
            self.weights_, self.means_, self.covariances_ = partition_gaussians(
                data, self.cluster_labels_, family
            )
            self.energy_history_ = search.run.history
        else:
            self.energy_ = tied_cost(self.cluster_labels_, variance, d)
            self.weights_, self.means_, _ = partition_gaussians(
                data, self.cluster_labels_, SPHERICAL
            )
            self.covariances_ = np.full(self.weights_.shape[0], variance)
            # the searched cost at the round's fixed variance, in X's units (>= energy_)
            self.energy_history_ = [
                e + 0.5 * d * math.log(search.variance) for e in search.run.history
            ]

    def _search(
        self, data: FloatArray, settings: CECSettings, n_parts: int, chunklets: Chunklets,
        colour: IntArray, rng: np.random.RandomState, first_iteration: int,
        family: int | None = None,
    ) -> Search:  # fmt: skip
        """Steps 2-3 with ``n_init`` restarts on ``data``: the lowest-cost valid partition into
        Gaussian clusters (before the merge of step 4)."""
        family = settings.family if family is None else family
        n, d = data.shape
        n_clusters, fraction, max_iter = (
            settings.n_clusters,
            settings.min_cluster_fraction,
            settings.max_iter,
        )
        min_size = min_cluster_size(n, d, family, fraction)
        best: GlobalRun | None = None
        best_item_of_point = np.empty(0, dtype=np.int64)
        iteration = first_iteration
        stop = False
        for _ in range(settings.n_init):
            items, item_chunk, item_of_point = build_items(
                data, chunklets.chunk, chunklets.n_chunklets, n_parts=n_parts,
                fraction=fraction, family=family, max_iter=max_iter, rng=rng,
            )  # fmt: skip
            graph = new_graph(
                item_chunk, chunklets.n_chunklets, chunklets.neg_ptr, chunklets.neg_idx,
                n_clusters,
            )  # fmt: skip
            run, stop = run_global(
                data, items, graph, item_of_point, n_clusters=n_clusters, colour=colour,
                family=family, min_size=min_size, max_iter=max_iter, tol=MOVE_TOL, rng=rng,
                progress=self.progress, first_iteration=iteration,
            )  # fmt: skip
            iteration += run.n_iter
            if best is None or run.energy < best.energy:
                best, best_item_of_point = run, item_of_point
            if stop:
                break
        assert best is not None
        return Search(best, best.item_cluster[best_item_of_point], iteration, stop, 1.0)

    def _tied_search(
        self, data: FloatArray, settings: CECSettings, n_parts: int, chunklets: Chunklets,
        colour: IntArray, rng: np.random.RandomState,
    ) -> tuple[Search, float]:  # fmt: skip
        """``tied_spherical``: searches at a fixed shared variance, refitted to the pooled
        variance of the result until it settles (tied_spherical.py); the partition of lowest
        tied cost and its pooled variance."""
        d = data.shape[1]
        variance = start_variance(data, settings.n_clusters)
        best: tuple[float, Search, float] | None = None
        iteration = 0
        cancelled = False
        for _ in range(ROUNDS):
            scaled = np.ascontiguousarray(data / math.sqrt(variance))
            search = self._search(
                scaled, settings, n_parts, chunklets, colour, rng, iteration, UNIT
            )
            search = search._replace(variance=variance)
            iteration, cancelled = search.iterations, search.cancelled
            pooled = pooled_variance(data, search.clusters)
            cost = tied_cost(search.clusters, pooled, d)
            if best is None or cost < best[0]:
                best = (cost, search, pooled)
            if cancelled or settled(variance, pooled):
                break
            variance = pooled
        assert best is not None
        _, search, pooled = best
        return search._replace(cancelled=cancelled), pooled

    def _fit_auto(
        self, X: ArrayLike, must_link: ArrayLike | None, cannot_link: ArrayLike | None
    ) -> C4S:
        """Fit each of AUTO_FAMILIES (or full alone without constraints) and keep the fit whose
        Gaussians agree with more constraints; the earlier family on a tie. A cancelled fit ends the
        search with what was fitted."""
        n = int(np.shape(X)[0])
        ml = check_pairs("must_link", must_link, n)
        cl = check_pairs("cannot_link", cannot_link, n)
        families = AUTO_FAMILIES if ml.shape[0] + cl.shape[0] else AUTO_FAMILIES[:1]
        offset = 0
        cancelled = False

        def relay(iteration: int, energy: float) -> object:
            nonlocal cancelled
            keep = self.progress(offset + iteration, energy) if self.progress else True
            cancelled = cancelled or keep is False
            return keep

        chosen: tuple[int, C4S] | None = None
        agreement: dict[str, int] = {}
        for name in families:
            candidate = type(self)(**{**self.get_params(deep=False), "covariance": name})
            candidate.progress = relay
            candidate.fit(X, must_link=ml, cannot_link=cl)
            offset += candidate.n_iter_
            agreement[name] = constraint_agreement(candidate.predict(X), ml, cl)
            if chosen is None or agreement[name] > chosen[0]:
                chosen = (agreement[name], candidate)
            if cancelled:
                break
        assert chosen is not None
        for key, value in vars(chosen[1]).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        self.covariance_agreement_ = agreement
        return self

    @engine_errstate
    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Group of each row: the Gaussian cluster chosen by the CEC rule argmax_i p_i f_i(x)
        (as ``CEC.predict``), mapped to its group. New points carry no constraints."""
        gaussian: NDArray[np.int64] = predict_components(self, X)[1]
        return self.cluster_groups_[gaussian]

    def fit_predict(
        self,
        X: ArrayLike,
        y: object = None,
        *,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
    ) -> NDArray[np.int64]:
        """``fit(X, must_link=must_link, cannot_link=cannot_link).labels_``."""
        return self.fit(X, must_link=must_link, cannot_link=cannot_link).labels_


def _merged_groups(
    cluster_of_point: IntArray, chunklets: Chunklets, ml: IntArray, cl: IntArray, n_clusters: int
) -> IntArray:
    """Step 4: the Gaussian clusters merged into groups, checked against every constraint (a
    violation is a bug in the search, never the data's)."""
    labels = merge_clusters(cluster_of_point, chunklets.chunk, n_clusters)
    if np.any(labels[cl[:, 0]] == labels[cl[:, 1]]) or np.any(labels[ml[:, 0]] != labels[ml[:, 1]]):
        raise RuntimeError("C4S produced a partition that violates a constraint (a bug)")
    return labels
