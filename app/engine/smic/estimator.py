"""SMIC: information-maximisation clustering with squared-loss mutual information.

Sugiyama, Yamada, Kimura, Hachiya, "Information-Maximization Clustering based on Squared-Loss
Mutual Information" (spec: shared/specs/smic.md). The estimator shell validates input,
orchestrates the pure functions of the `_smic_*` modules and stores the fitted state.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from app.engine.arrays import FloatArray
from app.engine.core.errstate import engine_errstate
from app.engine.fit_warnings import reset_fit_warnings, warn_fit
from app.engine.progress import Progress
from app.engine.smic.constraints import compile_constraints
from app.engine.smic.kernel import (
    local_scaling_kernel,
    nearest_neighbors,
    neighbour_algorithm,
    zero_scale_points,
)
from app.engine.smic.lsmi import DEFAULT_DELTAS, DEFAULT_GAMMAS, make_design
from app.engine.smic.predict import kernel_model, posterior
from app.engine.smic.search import Candidate, Problem, graph, search
from app.engine.smic.selection import Selection, near_tolerance
from app.engine.smic.spectral import near_ties

NORMALIZE_OPTIONS = ("auto", "none", "symmetric")
KERNELS = ("none", "symmetric")
EIGEN_SOLVERS = ("auto", "arpack", "dense")


class SMIC(ClusterMixin, BaseEstimator):
    """SMI-based clustering with the sparse local-scaling kernel and LSMI model selection.

    Parameters
    ----------
    n_clusters : int
        Number of clusters c (known, paper Sec. 2.1).
    n_neighbors : int or "auto"
        Kernel parameter t (eq. 7). "auto" evaluates t = 1..max_neighbors and keeps the t with
        the largest LSMI (paper Sec. 2.4); candidates whose sigma_i = 0 because of duplicate
        points are skipped.
    max_neighbors : int
        Largest candidate t for "auto" (paper: 10).
    normalize : "auto", "none" or "symmetric"
        "none" is eq. 7 as printed. "symmetric" uses D^{-1/2} K D^{-1/2}, which reproduces all
        four toy results of the paper (spec A12); the printed kernel reproduces two. "auto"
        (default) tries both for every t and lets LSMI choose (docs/smic.md).
    standardize : bool
        Centre and scale every feature to unit variance first (the paper's experiments; a
        constant feature is only centred).
    class_prior : array-like of shape (n_clusters,) or None
        Class prior pi (uniform if None). It is sorted ascending: cluster y of the output has
        prior np.sort(class_prior)[y] (spec Sec. 2.4).
    n_basis, n_folds, gammas, deltas
        LSMI: number of Gaussian centres b, CV folds M, and the grids of widths gamma and ridges
        delta (None = the paper's 9 x 9 grid).
    eigen_solver : "auto", "arpack" or "dense"
        "auto" (default): scipy.sparse.linalg.eigsh (ARPACK); on the degree-normalised kernel
        of a graph or component of at least 20,000 points ARPACK gets 40 restarts, and if its
        top eigenvalues are too crowded below 1 for that, LOBPCG preconditioned by algebraic
        multigrid (pyamg) solves it and the fit's later normalised kernels (spectral.py).
        "arpack": ARPACK always. "dense": a dense eigh (O(n^3), for checks).
    random_state : int, RandomState or None
        Seeds the LSMI centres and folds (drawn once for every t) and the ARPACK start vector.
    progress : callable(iteration, cost) -> bool, optional
        Called after each candidate (kernel, t) with iteration = 1, 2, ... and cost = -LSMI.
        Returning False stops the search; the fitted state is then chosen among the candidates
        evaluated so far.

    Side information (an extension, not part of the paper): ``fit(X, must_link=, cannot_link=)``
    closes must-links into chunklets, sets the kernel to 1 inside every chunklet and to 0
    between cannot-linked chunklets, and ranks candidates first by the number of violated
    constraints, then by LSMI (near-ties: the labels most candidates share, selection.py).

    Attributes
    ----------
    labels_ : (n,) int array. n_neighbors_ : chosen t. smi_ : LSMI of labels_ (chosen value).
    normalize_ : chosen kernel ("none" or "symmetric"). lsmi_curve_ : dict t -> LSMI of every
    evaluated t for the chosen kernel; lsmi_curves_ : the same per kernel.
    selection_support_ : candidates giving labels_. lsmi_params_ : (gamma, delta)
    chosen by CV for labels_. eigenvalues_ : (c,) top eigenvalues, descending.
    posterior_ : (n, c) raw n * p(y | x_i), column means = prior (rows need not sum to 1).
    unclaimed_ : (n,) bool, points with every posterior 0 (put in cluster 0).
    n_constraint_violations_ : int. n_features_in_ : int. feature_names_in_ (if X had names).
    kernel_model_ : the posterior model that ``predict`` evaluates at new points.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        n_neighbors: int | str = "auto",
        max_neighbors: int = 10,
        normalize: str = "auto",
        standardize: bool = True,
        class_prior: ArrayLike | None = None,
        n_basis: int = 200,
        n_folds: int = 5,
        gammas: ArrayLike | None = None,
        deltas: ArrayLike | None = None,
        eigen_solver: str = "auto",
        random_state: int | np.random.RandomState | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.max_neighbors = max_neighbors
        self.normalize = normalize
        self.standardize = standardize
        self.class_prior = class_prior
        self.n_basis = n_basis
        self.n_folds = n_folds
        self.gammas = gammas
        self.deltas = deltas
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------------ validation
    def _candidates(self, n: int) -> list[int]:
        if isinstance(self.n_neighbors, str):
            if self.n_neighbors != "auto":
                raise ValueError(f"n_neighbors must be an int or 'auto', got {self.n_neighbors!r}")
            if not isinstance(self.max_neighbors, int | np.integer) or self.max_neighbors < 1:
                raise ValueError(f"max_neighbors must be an int >= 1, got {self.max_neighbors!r}")
            return list(range(1, min(int(self.max_neighbors), n - 1) + 1))
        if not isinstance(self.n_neighbors, int | np.integer) or isinstance(self.n_neighbors, bool):
            raise ValueError(f"n_neighbors must be an int or 'auto', got {self.n_neighbors!r}")
        t = int(self.n_neighbors)
        if not 1 <= t <= n - 1:
            raise ValueError(f"n_neighbors={t} needs 1 <= n_neighbors <= n - 1 = {n - 1}")
        return [t]

    def _prior(self, c: int) -> FloatArray:
        if self.class_prior is None:
            return np.full(c, 1.0 / c)
        prior = np.asarray(self.class_prior, dtype=np.float64)
        if prior.shape != (c,) or not np.all(np.isfinite(prior)) or np.any(prior <= 0):
            raise ValueError(
                f"class_prior must hold {c} positive finite values, got {self.class_prior!r}"
            )
        if abs(prior.sum() - 1.0) > 1e-8:
            raise ValueError(f"class_prior must sum to 1, got sum {prior.sum()!r}")
        return np.sort(prior)

    def _grid(self, values: ArrayLike | None, default: FloatArray, name: str) -> FloatArray:
        grid = default if values is None else np.asarray(values, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError(f"{name} must be a non-empty list of positive numbers, got {values!r}")
        return grid

    def _check_params(self, n: int) -> None:
        c = self.n_clusters
        if not isinstance(c, int | np.integer) or isinstance(c, bool) or c < 1:
            raise ValueError(f"n_clusters must be an int >= 1, got {c!r}")
        if c > n:
            raise ValueError(f"n_clusters={c} is larger than the number of samples n={n}")
        if self.normalize not in NORMALIZE_OPTIONS:
            raise ValueError(
                f"normalize must be one of {NORMALIZE_OPTIONS}, got {self.normalize!r}"
            )
        if self.eigen_solver not in EIGEN_SOLVERS:
            raise ValueError(
                f"eigen_solver must be one of {EIGEN_SOLVERS}, got {self.eigen_solver!r}"
            )
        if not isinstance(self.n_basis, int | np.integer) or self.n_basis < 1:
            raise ValueError(f"n_basis must be an int >= 1, got {self.n_basis!r}")
        if not isinstance(self.n_folds, int | np.integer) or self.n_folds < 2:
            raise ValueError(f"n_folds must be an int >= 2, got {self.n_folds!r}")

    # ------------------------------------------------------------------ fitting
    @engine_errstate
    def fit(
        self,
        X: ArrayLike,
        y: object = None,
        *,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
    ) -> SMIC:
        """Cluster X; must_link / cannot_link are optional (m, 2) index arrays (extension),
        keyword-only and routable (app/engine/side_info.py); ``y`` is ignored."""
        data = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        reset_fit_warnings(self)
        n = data.shape[0]
        self._check_params(n)
        candidates = self._candidates(n)
        prior = self._prior(int(self.n_clusters))
        gammas = self._grid(self.gammas, DEFAULT_GAMMAS, "gammas")
        deltas = self._grid(self.deltas, DEFAULT_DELTAS, "deltas")
        constraints = compile_constraints(must_link, cannot_link, n)
        center, scale = np.zeros(data.shape[1]), np.ones(data.shape[1])
        if self.standardize:
            std = data.std(axis=0)
            center, scale = data.mean(axis=0), np.where(std > 0, std, 1.0)
            data = (data - center) / scale

        rng = check_random_state(self.random_state)
        design = make_design(data, int(self.n_basis), int(self.n_folds), rng)
        v0 = rng.uniform(-1.0, 1.0, n)  # one ARPACK start vector for every t
        algorithm = neighbour_algorithm(data, max(candidates))  # the fit's and predict's search
        idx, dist = nearest_neighbors(data, max(candidates), algorithm)
        if len(candidates) > 1:
            usable = [t for t in candidates if zero_scale_points(dist, t).size == 0]
            if not usable:
                # Every candidate has sigma_i = 0; the largest raises the explanatory error.
                local_scaling_kernel(idx, dist, candidates[-1])
            candidates = usable

        problem = Problem(
            idx, dist, constraints, prior, v0, design, gammas, deltas, str(self.eigen_solver)
        )
        kernels = KERNELS if self.normalize == "auto" else (str(self.normalize),)
        # LSMI works on b_y x b_y matrices (b_y <= 200): threaded BLAS only adds spin-waiting,
        # which cost 5-20x wall time on a busy 2-core machine (measured).
        with threadpool_limits(limits=1, user_api="blas"):
            done, selection = search(
                problem, candidates, kernels, int(self.n_clusters), self.progress
            )
        self._store(done, selection, data.shape[1])
        best = done[selection.chosen]
        c = int(self.n_clusters)
        self.kernel_model_ = kernel_model(
            center, scale, data, dist[:, best.t - 1], best.t, graph(problem, best.t),
            (best.eigenvalues[:c], best.eigenvectors[:, :c]), prior,
            best.normalize == "symmetric", algorithm,
        )  # fmt: skip
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Cluster of each row by the fitted posterior model (spec Sec. 2.6, predict.py):
        argmax_y of ``predict_posterior``, ties (and rows no cluster claims) to the lowest index.
        On the training points this is labels_ when the fit had no constraints, no duplicate
        points and no distance ties (new points carry no constraints)."""
        return np.asarray(self.predict_posterior(X).argmax(axis=1), dtype=np.int64)

    @engine_errstate
    def predict_posterior(self, X: ArrayLike) -> FloatArray:
        """Raw n p(y | x) of every row (as ``posterior_``: rows need not sum to 1)."""
        check_is_fitted(self)
        data = validate_data(self, X, dtype=np.float64, reset=False)
        return posterior(self.kernel_model_, data)

    def _store(self, done: list[Candidate], selection: Selection, n_features: int) -> None:
        c = int(self.n_clusters)
        best = done[selection.chosen]
        if selection.rival is not None:
            rival = done[selection.rival]
            warn_fit(
                self,
                f"model selection is ambiguous: LSMI {best.smi:.4f} (n_neighbors={best.t}, "
                f"normalize={best.normalize!r}, the labels of {selection.support} candidate(s)) "
                f"and {rival.smi:.4f} (n_neighbors={rival.t}, normalize={rival.normalize!r}) "
                f"differ by less than {near_tolerance(c):.4g} (0.5% of the largest possible "
                f"LSMI, (c - 1) / 2), but their labels agree only to ARI "
                f"{selection.rival_ari:.2f}; the first was kept because more candidates give "
                "its labels or its LSMI is higher. Compare both with a fixed n_neighbors.",
                UserWarning,
                stacklevel=3,
            )
        ties = near_ties(best.eigenvalues, best.eigenvectors)
        if ties.size and int(ties[0]) < c:
            warn_fit(
                self,
                f"eigenvalues {int(ties[0]) + 1} and {int(ties[0]) + 2} of the kernel for "
                f"n_neighbors={best.t} are tied; the labels then depend on the eigensolver",
                UserWarning,
                stacklevel=3,
            )
        if np.any(best.eigenvalues[:c] <= 0):
            warn_fit(
                self,
                f"some of the top {c} kernel eigenvalues are <= 0 for n_neighbors={best.t}; "
                "the kernel is not PSD and the posterior model is unreliable",
                UserWarning,
                stacklevel=3,
            )
        curves: dict[str, dict[int, float]] = {}
        for cand in done:
            curves.setdefault(cand.normalize, {})[cand.t] = cand.smi
        self.labels_ = best.result.labels.astype(np.int64)
        self.n_neighbors_ = best.t
        self.normalize_ = best.normalize
        self.smi_ = best.smi
        self.lsmi_curve_ = curves[best.normalize]
        self.lsmi_curves_ = curves
        self.selection_support_ = selection.support
        self.lsmi_params_ = (best.lsmi.gamma, best.lsmi.delta)
        self.eigenvalues_ = best.eigenvalues[:c]
        self.posterior_ = best.result.posterior
        self.unclaimed_ = best.result.unclaimed
        self.n_constraint_violations_ = best.violations
        self.n_features_in_ = n_features
