"""``PPC``: penalized probabilistic clustering (Lu & Leen 2007) as a scikit-learn estimator.

A Gaussian mixture whose prior over assignments carries pairwise relations (specs/ppc.md):

    P(Z | pi, W) = (1 / Omega(pi)) prod_i pi_{z_i} prod_{i != j} exp(W_ij [z_i = z_j])

``W`` follows the paper: it is the weight per *ordered* pair, so a pair (i, j) given once with
weight W contributes exp(2 W) when i and j share a component (spec Sec. 1.3). ``W > 0`` is a
link, ``W < 0`` a do-not-link, ``W = +-inf`` a hard relation (handled exactly: hard links are
contracted into chunklets, hard do-not-links exclude equal labels). ``confidence_to_weight``
turns a probability that a relation is right into W (eq. 2.15).

A thin shell: validation here, the start in ``start``, EM in ``fit``, per-component engines
in ``exact``, ``meanfield`` and ``gibbs``, label refinement in ``icm``, the pi M-step in
``prior``. Labels (samples of known component) condition the E-step (``fit(..., labels=)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from app.engine.arrays import FloatArray
from app.engine.core.chunked_input import is_dask_array
from app.engine.core.errstate import engine_errstate
from app.engine.core.families import DIAGONAL, FULL
from app.engine.core.fresh_starts import FRESH_STARTS, check_agreement, continued_is_enough
from app.engine.core.validation import check_choice, check_int, check_real
from app.engine.fit_warnings import reset_fit_warnings, warn_fit
from app.engine.ppc.chunked.chunked_ppc import fit_chunked_ppc
from app.engine.ppc.chunked.ppc_results import predict_proba_chunked
from app.engine.ppc.fit import Options, Params, PPCResult, check_feasible, run_em
from app.engine.ppc.graph import E_STEPS, RelationGraph, build_graph
from app.engine.ppc.mstep import log_gaussian, precision_cholesky
from app.engine.ppc.prior import PI_UPDATES
from app.engine.ppc.relations import Relations, check_labels, check_relations
from app.engine.ppc.select import (
    AUTO_STARTS,
    COVARIANCES,
    agreement,
    agreement_share,
    candidates,
    family_of,
)
from app.engine.ppc.start import INITS, group_whitening, kmeans_start, random_start
from app.engine.progress import Progress


def confidence_to_weight(confidence: ArrayLike, link: ArrayLike = True) -> FloatArray:
    """W = +-(1/2) log(gamma / (1 - gamma)) for a relation believed right with probability gamma.

    ``link`` says whether the relation is a link (True) or a do-not-link (False). The factor
    1/2 is the paper's ordered-pair convention (eq. 2.15): the pair's prior factor becomes
    (gamma / (1 - gamma))^{+-[z_i = z_j]}. gamma = 0.5 gives 0, gamma = 1 a hard relation
    (+-inf); gamma < 0.5 is the opposite relation with confidence 1 - gamma. For relations
    flipped independently with probability q use gamma = 1 - q (eq. 5.1).
    """
    gamma = np.asarray(confidence, dtype=np.float64)
    if np.any(~((gamma >= 0.0) & (gamma <= 1.0))):
        raise ValueError("confidence must lie in [0, 1]")
    sign = np.where(np.asarray(link, dtype=bool), 1.0, -1.0)
    with np.errstate(divide="ignore"):
        w = 0.5 * (np.log(gamma) - np.log1p(-gamma))
    return np.asarray(sign * w, dtype=np.float64)


def _check_damping(value: object) -> float:
    damping = check_real("mf_damping", value, 0.0, 1.0)
    if damping == 0.0:
        raise ValueError("mf_damping must be in (0, 1], got 0")
    return damping


def _check_unlabeled_weight(value: object) -> float:
    weight = check_real("unlabeled_weight", value, 0.0, 1.0)
    if weight == 0.0:
        raise ValueError("unlabeled_weight must be in (0, 1], got 0")
    return weight


def _whitening(X: FloatArray, graph: RelationGraph) -> FloatArray | None:
    """The metric of the samples known to share a component (``start.group_whitening``):
    chunklets of hard links, and samples of one label. Not on image grids (mean-field
    components), whose scribbles and neighbour links are no sample of a class's spread."""
    if graph.mf_nodes.shape[0]:
        return None
    chunklet = graph.super_of
    size = np.bincount(chunklet)
    group = np.where(size[chunklet] >= 2, chunklet, -1)
    if graph.labeled.shape[0]:
        group[graph.labeled] = chunklet.shape[0] + graph.label_of
    return group_whitening(X, group)


# a start's (agreement, warm, objective), its fit, whether it continued the previous fit
_Best = tuple[tuple[float, float, float], PPCResult, bool]
# the kept fit's ((agreement, objective), fit, covariance model, options, continued)
_Chosen = tuple[tuple[float, float], PPCResult, str, Options, bool]


@dataclass(frozen=True)
class _Problem:
    """One fit's checked inputs and how its starts are judged."""

    m: int  # n_components
    relations: Relations
    known: NDArray[np.int64]  # the labels checked: -1 unlabeled
    graph: RelationGraph
    models: tuple[str, ...]  # the covariance models, in the order they are fitted
    previous: tuple[str, Params] | None  # the previous fit to continue (warm_start)
    enough: float | None  # fresh_starts='if_worse': the agreement a continued fit must keep
    judge: bool  # starts are judged by their agreement with the side information
    starts: int  # fresh starts per model


class PPC(ClusterMixin, BaseEstimator):
    """Gaussian mixture with soft and hard pairwise relations, fitted by EM.

    Parameters
    ----------
    n_components : number of Gaussian components M.
    covariance : ``'full'``, ``'diagonal'``, ``'spherical'``, ``'tied'`` (one full covariance
        shared by all components) or ``'auto'`` (default): with relations or labels, fit full
        and tied and keep the one whose mixture agrees with more of them (``select.py``);
        without, full. The fitted choice is ``covariance_``.
    e_step : ``'auto'`` picks per connected component of the relation graph: sum-product on
        trees (pairs, stars, chains: the spec's closed forms), enumeration when M^|T| <=
        ``max_exact_states``, otherwise mean field (Gibbs if the component has hard
        do-not-links). ``'exact'`` refuses components it cannot solve exactly; ``'mean_field'``
        and ``'gibbs'`` use that engine on every component with relations.
    max_iter, tol : EM iterations per start; stop when the per-sample objective changes by less
        than ``tol * max(1, |objective|)`` (with mean-field components also when no mean
        moves by 1e-4 data standard deviations and no weight by 1e-4; with Gibbs components
        when the largest change of a mean, in those units, and of a weight is < tol, or once
        the parameters only wander within the sampler's noise: ``stationary.py``).
    n_init : random starts; the one with the highest objective is kept.
    random_state : seed for the starts and the Gibbs sampler.
    progress : optional ``progress(iteration, cost) -> bool`` called after every EM iteration
        with cost = -objective; returning False stops and keeps a consistent fitted state.
    reg_covar : added to covariance diagonals (as in GaussianMixture).
    pi_update : ``'optimize'`` (Newton on the logits, global), ``'grid'`` (the paper's 0.01 grid,
        M <= 4), ``'fixed'``, or ``'auto'``: optimize when Omega is exact for every component,
        otherwise (large mean-field/Gibbs components, e.g. image grids) optimize while their
        coupling is off (annealing's first phase) and hold pi from then on.
    max_exact_states : the enumeration bound per component (spec default 2^20).
    mf_damping, mf_tol, mf_max_iter : mean-field step size in (0, 1] (1: plain coordinate
        ascent), residual tolerance, most sweeps per E-step (EM carries on from there).
    anneal : for mean-field and Gibbs components, EM first runs with their coupling off (a
        Gaussian mixture fit there) until the objective changes by < 1e-3, then grows the
        coupling linearly to the model's over ``anneal`` iterations; 0 couples from the start.
    gibbs_sweeps, gibbs_burn_in : Gibbs sweeps averaged per E-step and discarded before them
        (the chain is warm-started from the previous E-step).
    init_params : ``'kmeans'`` (as GaussianMixture: k-means, then an M-step; components with
        labeled samples seeded at their mean) or ``'random'`` (spec Sec. 3.8: M distinct
        random samples as means, the data covariance, uniform weights).
    unlabeled_weight : in (0, 1]; the M-step counts every unlabeled sample with this weight and
        every labeled one with 1 (EM-lambda, Nigam et al. 2000). 1 (default) is the spec's EM.
        Below 1 the labeled samples keep the components near their classes when the unlabeled
        ones are many and the mixture is misspecified (image scribbles: docs/ppc.md).
    weights_init, means_init, covariances_init : optional start (GaussianMixture shapes) that
        overrides ``init_params`` for what is given.
    warm_start : when True and this estimator was fitted before, with the same
        ``n_components`` on data of the same width, the next ``fit`` also starts the
        covariance model it chose then (``covariance_``) from that fit's mixture, and keeps
        that continued fit unless a fresh start (or, under ``auto``, the other model) agrees
        with more of the relations and labels. Refitting after a few more relations then
        moves the mixture instead of redrawing it, yet leaves a local optimum the new relations
        contradict (docs/ppc.md, "Warm starts"). ``warm_started_`` says whether the kept fit
        continued the previous one.
    fresh_starts : with a warm start, draw the fresh starts (and fit the other model under
        ``auto``) ``'always'`` (default), or ``'if_worse'``: only when the continued fit's
        mixture agrees with the relations and labels less than the fit it continues did
        (``agreement_``, or the share given to ``start_from``): the expert's loop, where they
        cost most of a re-fit (``core/fresh_starts.py``). Under ``auto`` the continued model
        is then fitted first, so when the fresh starts are drawn they take the random draws
        in another order than with ``'always'``.

    Fitted attributes: ``labels_`` (joint labels that satisfy every hard relation and the
    labels; on mean-field and Gibbs components refined by ICM), ``resp_``
    (marginals P_p(z_i = k | X, Theta, W)), ``weights_``, ``means_``, ``covariances_``,
    ``lower_bound_`` (per-sample objective at the fitted parameters), ``lower_bound_history_``,
    ``n_iter_``, ``converged_``, ``n_features_in_``, ``warm_started_``, ``agreement_`` (the
    share of the relations and labels the fitted mixture's own labels respect; 1 without any).
    """

    agreement_: float | None  # None: continued from a fit whose agreement is unknown

    def __init__(
        self,
        n_components: int = 2,
        *,
        covariance: str = "auto",
        e_step: str = "auto",
        max_iter: int = 200,
        tol: float = 1e-6,
        n_init: int = 1,
        random_state: Any = None,
        progress: Progress | None = None,
        reg_covar: float = 1e-6,
        pi_update: str = "auto",
        max_exact_states: int = 2**20,
        mf_damping: float = 1.0,
        mf_tol: float = 1e-4,
        mf_max_iter: int = 30,
        gibbs_sweeps: int = 200,
        gibbs_burn_in: int = 50,
        anneal: int = 0,
        init_params: str = "kmeans",
        weights_init: ArrayLike | None = None,
        means_init: ArrayLike | None = None,
        covariances_init: ArrayLike | None = None,
        unlabeled_weight: float = 1.0,
        warm_start: bool = False,
        fresh_starts: str = "always",
    ) -> None:
        self.n_components = n_components
        self.covariance = covariance
        self.e_step = e_step
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.progress = progress
        self.reg_covar = reg_covar
        self.pi_update = pi_update
        self.max_exact_states = max_exact_states
        self.mf_damping = mf_damping
        self.mf_tol = mf_tol
        self.mf_max_iter = mf_max_iter
        self.gibbs_sweeps = gibbs_sweeps
        self.gibbs_burn_in = gibbs_burn_in
        self.anneal = anneal
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.covariances_init = covariances_init
        self.unlabeled_weight = unlabeled_weight
        self.warm_start = warm_start
        self.fresh_starts = fresh_starts

    def _options(self, graph: RelationGraph, covariance: str) -> Options:
        pi_update = check_choice("pi_update", self.pi_update, PI_UPDATES)
        pi_free = pi_update == "auto" and not graph.omega.exact
        if pi_update == "auto":
            pi_update = "optimize" if graph.omega.exact else "fixed"
        elif pi_update in ("optimize", "grid") and not graph.omega.exact:
            raise ValueError(
                f"pi_update={pi_update!r} needs Omega(pi), which is intractable for a relation "
                "component this large; use pi_update='fixed' or 'auto'"
            )
        family, tied = family_of(covariance)
        return Options(
            family=family,
            tied=tied,
            reg_covar=check_real("reg_covar", self.reg_covar, 0.0),
            max_iter=check_int("max_iter", self.max_iter, 1),
            tol=check_real("tol", self.tol, 0.0),
            pi_update=pi_update,
            mf_damping=_check_damping(self.mf_damping),
            mf_tol=check_real("mf_tol", self.mf_tol, 0.0),
            mf_max_iter=check_int("mf_max_iter", self.mf_max_iter, 1),
            gibbs_sweeps=check_int("gibbs_sweeps", self.gibbs_sweeps, 1),
            gibbs_burn_in=check_int("gibbs_burn_in", self.gibbs_burn_in, 0),
            anneal=check_int("anneal", self.anneal, 0),
            pi_free=pi_free,
            unlabeled_weight=_check_unlabeled_weight(self.unlabeled_weight),
        )

    def _start(
        self,
        X: FloatArray,
        m: int,
        family: int,
        reg_covar: float,
        graph: RelationGraph,
        rng: np.random.RandomState,
    ) -> Params:
        d = X.shape[1]
        init = check_choice("init_params", self.init_params, INITS)
        if init == "kmeans":
            weights, means, covariances = kmeans_start(
                X, m, family, reg_covar, graph.labeled, graph.label_of, rng, _whitening(X, graph)
            )
        else:
            weights, means, covariances = random_start(
                X, m, family, reg_covar, graph.labeled, graph.label_of, rng
            )
        return self.given_start((weights, means, covariances), m, d, family)

    def given_start(
        self, drawn: tuple[FloatArray, FloatArray, FloatArray] | None, m: int, d: int, family: int
    ) -> Params:
        """The start: ``weights_init``, ``means_init`` and ``covariances_init`` where given,
        the ``drawn`` start's for the rest (None: all three must be given), checked."""
        parts = [
            np.asarray(given, dtype=np.float64) if given is not None else None
            for given in (self.weights_init, self.means_init, self.covariances_init)
        ]
        if drawn is not None:
            parts = [p if p is not None else q for p, q in zip(parts, drawn, strict=True)]
        weights, means, covariances = parts
        assert weights is not None and means is not None and covariances is not None
        shape = {FULL: (m, d, d), DIAGONAL: (m, d)}.get(family, (m,))
        if weights.shape != (m,) or not np.isclose(weights.sum(), 1.0) or weights.min() <= 0:
            raise ValueError(f"weights_init must be {m} positive numbers summing to 1")
        if means.shape != (m, d):
            raise ValueError(f"means_init must have shape {(m, d)}, got {means.shape}")
        if covariances.shape != shape:
            raise ValueError(f"covariances_init must have shape {shape}, got {covariances.shape}")
        return Params(weights, means, covariances, precision_cholesky(covariances, family))

    @engine_errstate
    def fit(
        self,
        X: ArrayLike,
        y: object = None,
        *,
        pairs: ArrayLike | None = None,
        weights: ArrayLike | None = None,
        labels: ArrayLike | None = None,
    ) -> PPC:
        """Fit to ``X`` with relations ``pairs`` (m, 2) of weights ``weights`` (m,); ``y`` is
        ignored (side information is keyword-only, so Pipeline and GridSearchCV can route it
        with ``set_fit_request``; see app/engine/side_info.py for what CV can split).

        ``labels`` (n,) are samples of known component: -1 = unlabeled, c = component c. The
        E-step conditions on them (their posteriors are fixed to their component), which is
        what chains of hard links within a class and hard do-not-links between classes say,
        at the cost of one row per sample instead of a large constrained component.
        """
        if is_dask_array(X):  # data-parallel over its chunks (docs/distributed.md)
            with np.errstate(divide="ignore", over="ignore", under="ignore"):
                fit_chunked_ppc(self, X, pairs, weights, labels)
            return self
        data = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
        with np.errstate(divide="ignore", over="ignore", under="ignore"):
            return self._fit(data, pairs, weights, labels)

    def _fit(
        self,
        data: FloatArray,
        pairs: ArrayLike | None,
        weights: ArrayLike | None,
        labels: ArrayLike | None,
    ) -> PPC:
        reset_fit_warnings(self)
        problem = self._problem(data, pairs, weights, labels)
        rng = check_random_state(self.random_state)
        chosen = self._search(data, problem, rng)
        (score, _), kept, self.covariance_, opts, self.warm_started_ = chosen
        self._store(kept)
        relations, known = problem.relations, problem.known
        if not problem.judge:
            own = self._plain_proba(data, kept.params, opts.family).argmax(axis=1)
            score = agreement(own, relations, known)
        self.agreement_ = agreement_share(score, relations, known)
        if not kept.converged and not kept.cancelled:
            warn_fit(
                self,
                f"PPC did not converge within max_iter={opts.max_iter} EM iterations; increase "
                "max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def _problem(
        self,
        data: FloatArray,
        pairs: ArrayLike | None,
        weights: ArrayLike | None,
        labels: ArrayLike | None,
    ) -> _Problem:
        """Check the parameters, relations and labels (this order decides which error a call
        with several mistakes gets), build the relation graph, and order the models to try."""
        n = data.shape[0]
        m = check_int("n_components", self.n_components, 1, n)
        e_step = check_choice("e_step", self.e_step, E_STEPS)
        n_init = check_int("n_init", self.n_init, 1)
        max_states = check_int("max_exact_states", self.max_exact_states, 1)
        if self.progress is not None and not callable(self.progress):
            raise ValueError(f"progress must be a callable or None, got {self.progress!r}")
        covariance = check_choice("covariance", self.covariance, list(COVARIANCES))
        relations = check_relations(pairs, weights, n)
        known = check_labels(labels, n, m, relations)
        graph = build_graph(relations, n, m, e_step, max_states, known)
        models = candidates(covariance, relations, known, graph.mf_nodes.shape[0] > 0)
        self._options(graph, models[0])  # checks its parameters before feasibility is checked
        check_feasible(graph, m)
        previous = self._previous_fit(data, m)
        fresh = check_choice("fresh_starts", self.fresh_starts, FRESH_STARTS)
        enough = getattr(self, "agreement_", None) if fresh == "if_worse" else None
        if previous is not None and enough is not None and previous[0] in models:
            models = (previous[0], *[name for name in models if name != previous[0]])
        # choosing by the side information: AUTO_STARTS starts per model, the best by
        # (agreement, objective); otherwise n_init starts, the best by the objective. A warm
        # start is one more start of the previous fit's model that wins ties in agreement
        # against that model's fresh starts: one of them replaces it only when its mixture
        # agrees with more of the side information (the previous fit may be a local optimum
        # the new relations contradict). Between models the rule is the usual one.
        judge = len(models) > 1 or previous is not None
        starts = max(n_init, AUTO_STARTS) if len(models) > 1 else n_init
        return _Problem(m, relations, known, graph, models, previous, enough, judge, starts)

    def _search(self, data: FloatArray, problem: _Problem, rng: np.random.RandomState) -> _Chosen:
        """The kept fit: each model's best start, the best of those by (agreement,
        objective); a cancelled fit or a continued one that is good enough ends the search."""
        chosen: _Chosen | None = None
        iterations = 0  # counted across every start of every model, for ``progress``
        for name in problem.models:
            opts = self._options(problem.graph, name)
            best, iterations, stop = self._best_start(data, problem, name, opts, rng, iterations)
            (score, _, bound), result, warm = best
            if chosen is None or (score, bound) > chosen[0]:
                chosen = ((score, bound), result, name, opts, warm)
            if stop:
                break
        assert chosen is not None
        return chosen

    def _best_start(
        self,
        data: FloatArray,
        problem: _Problem,
        name: str,
        opts: Options,
        rng: np.random.RandomState,
        iterations: int,
    ) -> tuple[_Best, int, bool]:
        """The best start of model ``name`` by (agreement, warm, objective), the iterations
        counted so far, and whether the search stops here (cancelled, or the continued fit
        is good enough under ``fresh_starts='if_worse'``)."""
        previous, relations, known = problem.previous, problem.relations, problem.known
        graph = problem.graph
        continues = previous is not None and previous[0] == name
        best: _Best | None = None
        stop = False
        for attempt in range(problem.starts + int(continues)):
            warm = continues and attempt == 0
            if warm:
                assert previous is not None
                start = previous[1]
            else:
                start = self._start(data, problem.m, opts.family, opts.reg_covar, graph, rng)
            result = run_em(data, start, graph, opts, rng, self.progress, iterations)
            iterations += result.n_iter
            score = 0.0
            if problem.judge:
                plain = self._plain_proba(data, result.params, opts.family).argmax(axis=1)
                score = agreement(plain, relations, known)
            key = (score, float(warm), result.estep.bound)
            if best is None or key > best[0]:
                best = (key, result, warm)
            if result.cancelled:
                stop = True
                break
            if warm and continued_is_enough(
                agreement_share(score, relations, known), problem.enough
            ):
                stop = True  # judged: a warm start is one
                break
        assert best is not None
        return best, iterations, stop

    def start_from(
        self,
        weights: ArrayLike,
        means: ArrayLike,
        covariances: ArrayLike,
        covariance: str,
        agreement: float | None = None,
    ) -> PPC:
        """Make the next ``fit`` continue this mixture, as if this estimator had fitted it
        (``warm_start`` on): for a mixture kept from an earlier fit, e.g. a stored run.
        ``covariance`` is the model it belongs to (``'full'``, ``'tied'``, ...); shapes are
        GaussianMixture's for that model; ``agreement`` that fit's ``agreement_`` (None:
        unknown, so ``fresh_starts='if_worse'`` draws them)."""
        name = check_choice("covariance", covariance, [c for c in COVARIANCES if c != "auto"])
        family = family_of(name)[0]
        w = np.asarray(weights, dtype=np.float64)
        mu = np.asarray(means, dtype=np.float64)
        cov = np.asarray(covariances, dtype=np.float64)
        if mu.ndim != 2 or w.shape != (mu.shape[0],):
            raise ValueError(f"weights {w.shape} and means {mu.shape} must be (M,) and (M, d)")
        m, d = mu.shape
        shape = {FULL: (m, d, d), DIAGONAL: (m, d)}.get(family, (m,))
        if cov.shape != shape:
            raise ValueError(f"{name} covariances must have shape {shape}, got {cov.shape}")
        if not (np.all(np.isfinite(w)) and np.all(w > 0) and np.isclose(w.sum(), 1.0)):
            raise ValueError(f"weights must be {m} positive numbers summing to 1")
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(cov))):
            raise ValueError("means and covariances must be finite")
        check_agreement(agreement)
        self.agreement_ = agreement
        self.precisions_cholesky_ = precision_cholesky(cov, family)
        self.weights_, self.means_, self.covariances_, self.covariance_ = w, mu, cov, name
        self.n_features_in_ = d
        self.warm_start = True
        return self

    def _previous_fit(self, data: FloatArray, m: int) -> tuple[str, Params] | None:
        """The last fit's (covariance, mixture) when ``warm_start`` may start from it."""
        if not self.warm_start or not hasattr(self, "means_"):
            return None
        if self.means_.shape != (m, data.shape[1]):
            return None  # another n_components or another width: nothing to continue
        mixture = Params(self.weights_, self.means_, self.covariances_, self.precisions_cholesky_)
        return self.covariance_, mixture

    def _store(self, result: PPCResult) -> None:
        self.weights_ = result.params.weights
        self.means_ = result.params.means
        self.covariances_ = result.params.covariances
        self.precisions_cholesky_ = result.params.prec_chol
        self.resp_ = result.estep.resp
        self.labels_ = result.estep.labels
        self.lower_bound_ = result.estep.bound
        self.lower_bound_history_ = result.history
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged

    @staticmethod
    def _plain_proba(data: FloatArray, params: Params, family: int) -> FloatArray:
        """The mixture posterior, without the relations."""
        a = log_gaussian(data, params.means, params.prec_chol, family) + np.log(params.weights)
        a -= a.max(axis=1, keepdims=True)
        p = np.exp(a)
        return np.asarray(p / p.sum(axis=1, keepdims=True))

    @engine_errstate
    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """P_s(k | x, Theta): the plain mixture posterior (relations never apply to new data);
        a lazy dask array for a dask array."""
        check_is_fitted(self)
        if is_dask_array(X):
            return predict_proba_chunked(self, X)
        data = validate_data(self, X, dtype=np.float64, reset=False)
        params = Params(self.weights_, self.means_, self.covariances_, self.precisions_cholesky_)
        return self._plain_proba(data, params, family_of(self.covariance_)[0])

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """argmax_k pi_k N(x; mu_k, Sigma_k) for every row (a lazy dask array for one)."""
        if is_dask_array(X):
            return self.predict_proba(X).argmax(axis=1).astype(np.int64)
        return np.asarray(self.predict_proba(X).argmax(axis=1), dtype=np.int64)

    def fit_predict(
        self,
        X: ArrayLike,
        y: object = None,
        *,
        pairs: ArrayLike | None = None,
        weights: ArrayLike | None = None,
        labels: ArrayLike | None = None,
    ) -> NDArray[np.int64]:
        """``fit(X, pairs=pairs, weights=weights, labels=labels).labels_``."""
        return self.fit(X, pairs=pairs, weights=weights, labels=labels).labels_
