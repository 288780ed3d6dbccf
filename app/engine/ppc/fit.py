"""PPC's EM: E-step per component engine, M-step, restarts, convergence, cancellation.

Pure functions over arrays; ``estimator.PPC`` validates and calls ``run_em``. Labeled samples
are conditioned on their component (log-scores -inf elsewhere, ``clamp``). Mean-field and Gibbs
components are annealed (``Schedule``) and their final labels refined by ICM. The objective tracked
per iteration (``bound``, per sample) is the penalised log-likelihood
``sum_T [log Z_T(a) - log Omega_T(pi)] / N`` of specs/ppc.md Sec. 2.4, exact where every
component is solved exactly; mean-field components contribute their ELBO F(Q) <= log Z_T
(Sec. 3.5), Gibbs components F evaluated at the sampled marginals (a surrogate). Components whose
Omega is intractable are left out of the log Omega term; pi is then held fixed, so the term is a
constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from app.engine.arrays import FloatArray, IntArray
from app.engine.ppc.colouring import dsatur
from app.engine.ppc.exact import solve_exact
from app.engine.ppc.gibbs import feasible_labels, gibbs_sweep
from app.engine.ppc.graph import ENUM, GIBBS, TREE, OmegaModel, RelationGraph
from app.engine.ppc.icm import icm
from app.engine.ppc.meanfield import mean_field_bound, mean_field_sweeps
from app.engine.ppc.mstep import gaussian_m_step, log_gaussian, precision_cholesky, tie
from app.engine.ppc.prior import grid_log_omega, grid_pi, log_omega, optimize_pi, simplex_grid
from app.engine.ppc.stationary import DriftMonitor, parameter_change
from app.engine.progress import Progress, asks_to_stop


@dataclass(frozen=True)
class Options:
    family: int
    reg_covar: float
    max_iter: int
    tol: float
    pi_update: str  # resolved: "optimize", "grid" or "fixed"
    mf_damping: float
    mf_tol: float
    mf_max_iter: int
    gibbs_sweeps: int
    gibbs_burn_in: int
    anneal: int = 0  # EM iterations over which large components' coupling grows to full
    pi_free: bool = False  # pi is held only because Omega is intractable (pi_update="auto")
    free_tol: float = 1e-3  # before that, EM without their coupling until this tolerance
    tied: bool = False  # covariance='tied': one full covariance shared by every component
    unlabeled_weight: float = 1.0  # M-step weight of an unlabeled sample (EM-lambda), labeled 1


@dataclass
class Params:
    weights: FloatArray
    means: FloatArray
    covariances: FloatArray
    prec_chol: FloatArray


@dataclass
class _Chain:
    """Warm-start state of the approximate engines, carried across EM iterations."""

    Q: FloatArray | None = None
    z: IntArray | None = None


@dataclass
class EStep:
    resp: FloatArray  # (n, M) marginals P_p(z_i = k | X, Theta, W)
    labels: IntArray
    bound: float  # per sample


@dataclass
class PPCResult:
    params: Params
    estep: EStep
    n_iter: int
    converged: bool
    cancelled: bool
    history: list[float] = field(default_factory=list)


def _softmax_rows(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    top = a.max(axis=1, keepdims=True)
    e = np.exp(a - top)
    s = e.sum(axis=1, keepdims=True)
    return e / s, (top + np.log(s))[:, 0]


def clamp(a_pts: FloatArray, graph: RelationGraph) -> FloatArray:
    """Log-scores with labeled samples conditioned on their component (-inf elsewhere)."""
    if graph.labeled.shape[0] == 0:
        return a_pts
    out = a_pts.copy()
    keep = out[graph.labeled, graph.label_of]
    out[graph.labeled] = -np.inf
    out[graph.labeled, graph.label_of] = keep
    return out


def _super_scores(a_pts: FloatArray, graph: RelationGraph) -> FloatArray:
    if graph.n_super == a_pts.shape[0]:
        return a_pts  # no hard links: super-node i is sample i
    out = np.empty((graph.n_super, a_pts.shape[1]))
    for k in range(a_pts.shape[1]):
        out[:, k] = np.bincount(graph.super_of, weights=a_pts[:, k], minlength=graph.n_super)
    return out


def e_step(
    X: FloatArray,
    params: Params,
    graph: RelationGraph,
    opts: Options,
    chain: _Chain,
    rng: np.random.RandomState,
    scale: float = 1.0,
    refine: bool = False,
) -> EStep:
    """Marginals, labels that respect every hard relation, and the per-sample objective."""
    a_pts = log_gaussian(X, params.means, params.prec_chol, opts.family) + np.log(params.weights)
    est = infer(a_pts, graph, opts, chain, rng, scale, refine)
    est.bound = (est.bound - log_omega(graph.omega, params.weights)) / X.shape[0]
    return est


def infer(
    a_pts: FloatArray,
    graph: RelationGraph,
    opts: Options,
    chain: _Chain,
    rng: np.random.RandomState,
    scale: float = 1.0,
    refine: bool = False,
) -> EStep:
    """Posterior marginals of P(Z) ∝ exp(sum_i a_{i z_i} + sum_{i<j} J_ij [z_i = z_j]).

    Labeled samples are conditioned on their component. ``bound`` is log Z (or its mean-field
    / Gibbs surrogate), summed over components. ``scale`` multiplies the couplings of the
    mean-field and Gibbs components (annealing); ``refine`` improves their labels by ICM.
    """
    n = a_pts.shape[0]
    a = _super_scores(clamp(a_pts, graph), graph)
    if not graph.has_edges:
        marg, logz = _softmax_rows(a)
        total = float(logz.sum())
        labels = marg.argmax(axis=1)
    else:
        marg = np.empty_like(a)
        decode = np.zeros(graph.n_super, dtype=np.int64)
        singles = graph.single_nodes
        marg[singles], logz = _softmax_rows(a[singles])
        total = float(logz.sum())
        tree_logz, enum_logz = solve_exact(graph.exact, a, marg, decode)
        total += float(tree_logz.sum() + enum_logz.sum())
        total += _approximate(a, graph, opts, chain, marg, decode, rng, scale)
        labels = marg.argmax(axis=1)
        hard = graph.comp_hard[graph.comp_of] & (
            np.isin(graph.comp_kind[graph.comp_of], (TREE, ENUM, GIBBS))
        )
        labels[hard] = decode[hard]
        if refine:
            _refine(a, graph, labels, scale)
    if graph.n_super == n:
        return EStep(marg, labels, total)
    return EStep(marg[graph.super_of], labels[graph.super_of], total)


def _approximate(
    a: FloatArray,
    graph: RelationGraph,
    opts: Options,
    chain: _Chain,
    marg: FloatArray,
    decode: IntArray,
    rng: np.random.RandomState,
    scale: float,
) -> float:
    """Mean-field and Gibbs components; returns their contribution to the objective."""
    total = 0.0
    nbr = (graph.nbr_ptr, graph.nbr_idx, graph.nbr_J)
    if graph.mf_nodes.shape[0]:
        if chain.Q is None:
            chain.Q = _softmax_rows(a)[0]
        mean_field_sweeps(
            a,
            graph.mf_nodes,
            graph.mf_colours,
            *nbr,
            chain.Q,
            opts.mf_damping,
            opts.mf_tol,
            opts.mf_max_iter,
            scale,
        )
        marg[graph.mf_nodes] = chain.Q[graph.mf_nodes]
        total += mean_field_bound(a, graph.mf_nodes, *nbr, chain.Q, scale)
    nodes = graph.gibbs_nodes
    if nodes.shape[0]:
        if chain.z is None:
            chain.z = initial_state(a, graph)
        acc = np.zeros_like(a)
        best = -np.inf
        for sweep in range(opts.gibbs_burn_in + opts.gibbs_sweeps):
            keep = sweep >= opts.gibbs_burn_in
            score = gibbs_sweep(
                a,
                nodes,
                *nbr,
                graph.nbr_hard,
                chain.z,
                np.asarray(rng.random_sample(nodes.shape[0])),
                acc,
                keep,
                scale,
            )
            if keep and score > best:
                best = score
                decode[nodes] = chain.z[nodes]
        marg[nodes] = acc[nodes] / opts.gibbs_sweeps
        total += mean_field_bound(a, nodes, *nbr, marg, scale)
    return total


ICM_SWEEPS = 50


def _refine(a: FloatArray, graph: RelationGraph, labels: IntArray, scale: float) -> None:
    """ICM from the current labels of the mean-field and Gibbs components (MAP refinement)."""
    nbr = (graph.nbr_ptr, graph.nbr_idx, scale * graph.nbr_J)
    for nodes, colours in (
        (graph.mf_nodes, graph.mf_colours),
        (graph.gibbs_nodes, graph.gibbs_colours),
    ):
        if nodes.shape[0]:
            icm(a, nodes, colours, *nbr, graph.nbr_hard, labels, ICM_SWEEPS)


SEARCH_BUDGET = 1_000_000  # backtracking steps for a feasible Gibbs start


def initial_state(a: FloatArray, graph: RelationGraph) -> IntArray:
    """A labelling of the Gibbs nodes that satisfies all their hard do-not-links."""
    nodes = graph.gibbs_nodes
    hard = graph.nbr_hard
    rows = np.repeat(np.arange(graph.n_super), np.diff(graph.nbr_ptr))
    adjacency = csr_matrix(
        (np.ones(int(hard.sum())), (rows[hard], graph.nbr_idx[hard])),
        shape=(graph.n_super, graph.n_super),
    )
    seen = np.zeros(graph.n_super, dtype=bool)
    order: list[IntArray] = []
    for start in nodes:
        if not seen[start]:
            bfs = breadth_first_order(
                adjacency, int(start), directed=False, return_predecessors=False
            )
            seen[bfs] = True
            order.append(np.asarray(bfs, dtype=np.int64))
    z = np.full(graph.n_super, -1, dtype=np.int64)
    status = feasible_labels(
        a, np.concatenate(order), graph.nbr_ptr, graph.nbr_idx, hard, z, SEARCH_BUDGET
    )
    if status == -3:  # out of budget, not proven infeasible: DSATUR, then search in its order
        done, greedy = dsatur(a, nodes, graph.nbr_ptr, graph.nbr_idx, hard, z)
        if not done:
            status = feasible_labels(
                a, greedy, graph.nbr_ptr, graph.nbr_idx, hard, z, SEARCH_BUDGET
            )
        else:
            status = -1
    if status != -1:
        sample = int(graph.dnl_i[0]) if graph.dnl_i.shape[0] else 0
        reason = "no labelling exists" if status == -2 else "the search budget ran out"
        raise ValueError(
            f"could not label the samples so that every hard do-not-link holds ({reason}; "
            f"e.g. around sample {sample}); increase n_components or remove some of them"
        )
    return z


def m_step(
    X: FloatArray,
    resp: FloatArray,
    params: Params,
    graph: RelationGraph,
    opts: Options,
    grid: tuple[FloatArray, FloatArray] | None,
    pi_update: str,
    sample_weight: FloatArray | None = None,
) -> Params:
    if sample_weight is not None:
        resp = resp * sample_weight[:, np.newaxis]
    moments = gaussian_m_step(X, resp, opts.family, opts.reg_covar)
    return mixture_from(moments, params, graph.omega, opts, grid, pi_update)


def mixture_from(
    moments: tuple[FloatArray, FloatArray, FloatArray],
    params: Params,
    omega: OmegaModel,
    opts: Options,
    grid: tuple[FloatArray, FloatArray] | None,
    pi_update: str,
) -> Params:
    """The M-step's mixture from the soft counts, means and covariances: tied if asked, pi
    by ``pi_update`` (``params``' pi when fixed)."""
    nk, means, covariances = moments
    if opts.tied:
        covariances = tie(nk, covariances)
    if pi_update == "optimize":
        weights = optimize_pi(nk, omega, params.weights)
    elif pi_update == "grid" and grid is not None:
        weights = grid_pi(nk, *grid)
    else:
        weights = params.weights
    return Params(weights, means, covariances, precision_cholesky(covariances, opts.family))


def m_step_weights(n: int, graph: RelationGraph, opts: Options) -> FloatArray | None:
    """Per-sample M-step weights of EM-lambda (Nigam et al. 2000): labeled samples 1, the others
    ``unlabeled_weight``; None (plain EM) when that is 1 or nothing is labeled."""
    if opts.unlabeled_weight == 1.0 or graph.labeled.shape[0] == 0:
        return None
    weights = np.full(n, opts.unlabeled_weight)
    weights[graph.labeled] = 1.0
    return weights


def _parameter_change(old: Params, new: Params, scale: float) -> float:
    return parameter_change((old.means, old.weights), (new.means, new.weights), scale)


PARAMETER_TOL = 1e-4  # largest change of a mean (in data standard deviations) or of a weight


class Schedule:
    """The coupling scale of the mean-field and Gibbs components over EM (annealing).

    Phase 1 (scale 0): EM without their coupling (a Gaussian mixture fit for those samples,
    with pi updated exactly, since Omega = 1 there) until the objective changes by less than
    ``free_tol``. Phase 2: the scale grows linearly to 1 over ``anneal`` iterations, pi held.
    Phase 3: the model itself (scale 1) until convergence. ``anneal = 0`` starts at phase 3.
    """

    def __init__(self, graph: RelationGraph, opts: Options) -> None:
        large = graph.mf_nodes.shape[0] + graph.gibbs_nodes.shape[0] > 0
        self.steps = opts.anneal if large else 0
        self.step = 0 if self.steps else -1
        self.free_tol = opts.free_tol
        self.pi_update = opts.pi_update
        self.pi_free = opts.pi_free

    @property
    def scale(self) -> float:
        return 1.0 if self.step < 0 else self.step / self.steps

    @property
    def full(self) -> bool:
        return self.step < 0

    def pi_rule(self) -> str:
        if self.step == 0 and self.pi_free:
            return "optimize"  # exact while the large components are uncoupled
        return self.pi_update

    def advance(self, previous: float | None, current: float) -> None:
        if self.step < 0:
            return
        if self.step == 0 and (
            previous is None or abs(current - previous) > self.free_tol * max(1.0, abs(current))
        ):
            return
        self.step += 1
        if self.step >= self.steps:
            self.step = -1


class StopRule:
    """When EM from one start has converged: the annealing schedule, then the objective's
    relative change (exact E-steps), also the parameters' (mean field), or their change and
    drift (Gibbs). ``run_em`` and the data-parallel EM (app/engine/ppc/chunked) both use it."""

    def __init__(self, graph: RelationGraph, opts: Options, scale: float) -> None:
        self.schedule = Schedule(graph, opts)
        self.tol = opts.tol
        self.scale = scale
        self.stochastic = graph.gibbs_nodes.shape[0] > 0
        self.mean_field = graph.mf_nodes.shape[0] > 0
        self.drift = DriftMonitor(scale)
        self.previous: float | None = None

    def converged(self, bound: float, old: Params, new: Params) -> bool:
        """After an E-step with objective ``bound`` at ``old`` and the M-step to ``new``."""
        schedule = self.schedule
        full = schedule.full
        converged = False
        if not full:
            schedule.advance(self.previous, bound)
            self.previous = bound if schedule.step == 0 else None
        elif self.stochastic:
            # Gibbs noise keeps the parameters moving: also stop once they only wander.
            converged = _parameter_change(old, new, self.scale) < self.tol
            converged = converged or self.drift.update(new.means, new.weights)
        elif self.previous is not None:
            converged = abs(bound - self.previous) <= self.tol * max(1.0, abs(bound))
            if self.mean_field:  # spec Sec. 3.8: approximate E-steps stop on the parameters
                converged |= _parameter_change(old, new, self.scale) < PARAMETER_TOL
        if full:
            self.previous = bound
        return converged


def pi_grid(opts: Options, graph: RelationGraph, m: int) -> tuple[FloatArray, FloatArray] | None:
    """The paper's simplex grid and log Omega on it, when pi is updated on the grid."""
    if opts.pi_update != "grid":
        return None
    nodes = simplex_grid(m)
    return nodes, grid_log_omega(graph.omega, nodes)


def run_em(
    X: FloatArray,
    start: Params,
    graph: RelationGraph,
    opts: Options,
    rng: np.random.RandomState,
    progress: Progress | None,
    iteration0: int,
) -> PPCResult:
    """EM from one start; stops on convergence, at max_iter, or when progress returns False."""
    grid = pi_grid(opts, graph, start.weights.shape[0])
    params = start
    chain = _Chain()
    stop = StopRule(graph, opts, float(X.std(axis=0).max()) or 1.0)
    history: list[float] = []
    converged = cancelled = False
    n_iter = 0
    sample_weight = m_step_weights(X.shape[0], graph, opts)
    for n_iter in range(1, opts.max_iter + 1):
        schedule = stop.schedule
        est = e_step(X, params, graph, opts, chain, rng, schedule.scale)
        new = m_step(X, est.resp, params, graph, opts, grid, schedule.pi_rule(), sample_weight)
        converged = stop.converged(est.bound, params, new)
        params = new
        history.append(est.bound)
        if asks_to_stop(progress, iteration0 + n_iter, -est.bound):
            cancelled = True
            break
        if converged:
            break
    final = e_step(X, params, graph, opts, chain, rng, refine=True)
    return PPCResult(params, final, n_iter, converged, cancelled, history)


def _infeasible(logz: FloatArray) -> list[int]:
    return [int(c) for c in np.flatnonzero(logz == -np.inf)]


def check_feasible(graph: RelationGraph, m: int, names: IntArray | None = None) -> None:
    """Every exactly solved component must admit a labelling that satisfies its hard
    do-not-links and the labels (Gibbs components are checked by ``initial_state``).
    ``names``: the samples' indices in the caller's data, when the graph is over a subset."""
    if not (graph.exact.n_enum or (graph.exact.n_trees and graph.labeled.shape[0])):
        return
    n = graph.super_of.shape[0]
    a = _super_scores(clamp(np.zeros((n, m)), graph), graph)
    tree_logz, enum_logz = solve_exact(
        graph.exact, a, np.empty_like(a), np.zeros(graph.n_super, np.int64)
    )
    ex = graph.exact
    bad = [ex.tree_order[ex.tree_ptr[t] : ex.tree_ptr[t + 1]] for t in _infeasible(tree_logz)]
    bad += [ex.enum_nodes[ex.enum_ptr[c] : ex.enum_ptr[c + 1]] for c in _infeasible(enum_logz)]
    for nodes in bad:
        inside = np.isin(graph.super_of[graph.dnl_i], nodes)
        i, j = int(graph.dnl_i[inside][0]), int(graph.dnl_j[inside][0])
        if names is not None:
            i, j = int(names[i]), int(names[j])
        labels = " and the labels" if graph.labeled.shape[0] else ""
        raise ValueError(
            f"the hard do-not-links around pair ({i}, {j}){labels} cannot all hold with "
            f"n_components={m} (no labelling of their component satisfies them); increase "
            "n_components or remove some of them"
        )
