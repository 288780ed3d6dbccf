"""PPC's EM: E-step per component engine, M-step, restarts, convergence, cancellation.

Pure functions over arrays; ``ppc.PPC`` validates and calls ``fit_ppc``. The objective tracked
per iteration (``bound``, per sample) is the penalised log-likelihood
``sum_T [log Z_T(a) - log Omega_T(pi)] / N`` of specs/ppc.md Sec. 2.4, exact where every
component is solved exactly; mean-field components contribute their ELBO F(Q) <= log Z_T
(Sec. 3.5), Gibbs components F evaluated at the sampled marginals (a surrogate). Components whose
Omega is intractable are left out of the log Omega term; pi is then held fixed, so the term is a
constant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from app.engine.ppc.exact import solve_exact
from app.engine.ppc.gibbs import feasible_labels, gibbs_sweep
from app.engine.ppc.graph import ENUM, GIBBS, TREE, RelationGraph
from app.engine.ppc.meanfield import mean_field_bound, mean_field_sweeps
from app.engine.ppc.mstep import gaussian_m_step, log_gaussian, precision_cholesky
from app.engine.ppc.prior import grid_log_omega, grid_pi, log_omega, optimize_pi, simplex_grid

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Progress = Callable[[int, float], object]


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
) -> EStep:
    """Marginals, labels that respect every hard relation, and the per-sample objective."""
    a_pts = log_gaussian(X, params.means, params.prec_chol, opts.family) + np.log(params.weights)
    est = infer(a_pts, graph, opts, chain, rng)
    est.bound = (est.bound - log_omega(graph.omega, params.weights)) / X.shape[0]
    return est


def infer(
    a_pts: FloatArray,
    graph: RelationGraph,
    opts: Options,
    chain: _Chain,
    rng: np.random.RandomState,
) -> EStep:
    """Posterior marginals of P(Z) ∝ exp(sum_i a_{i z_i} + sum_{i<j} J_ij [z_i = z_j]).

    ``bound`` is log Z (or its mean-field / Gibbs surrogate), summed over components.
    """
    n = a_pts.shape[0]
    a = _super_scores(a_pts, graph)
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
        total += _approximate(a, graph, opts, chain, marg, decode, rng)
        labels = marg.argmax(axis=1)
        hard = graph.comp_hard[graph.comp_of] & (
            np.isin(graph.comp_kind[graph.comp_of], (TREE, ENUM, GIBBS))
        )
        labels[hard] = decode[hard]
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
) -> float:
    """Mean-field and Gibbs components; returns their contribution to the objective."""
    total = 0.0
    nbr = (graph.nbr_ptr, graph.nbr_idx, graph.nbr_J)
    if graph.mf_nodes.shape[0]:
        if chain.Q is None:
            chain.Q = _softmax_rows(a)[0]
        mean_field_sweeps(
            a, graph.mf_nodes, *nbr, chain.Q, opts.mf_damping, opts.mf_tol, opts.mf_max_iter
        )
        marg[graph.mf_nodes] = chain.Q[graph.mf_nodes]
        total += mean_field_bound(a, graph.mf_nodes, *nbr, chain.Q)
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
            )
            if keep and score > best:
                best = score
                decode[nodes] = chain.z[nodes]
        marg[nodes] = acc[nodes] / opts.gibbs_sweeps
        total += mean_field_bound(a, nodes, *nbr, marg)
    return total


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
) -> Params:
    nk, means, covariances = gaussian_m_step(X, resp, opts.family, opts.reg_covar)
    if opts.pi_update == "optimize":
        weights = optimize_pi(nk, graph.omega, params.weights)
    elif opts.pi_update == "grid" and grid is not None:
        weights = grid_pi(nk, *grid)
    else:
        weights = params.weights
    return Params(weights, means, covariances, precision_cholesky(covariances, opts.family))


def _parameter_change(old: Params, new: Params, scale: float) -> float:
    return float(
        max(np.abs(new.means - old.means).max() / scale, np.abs(new.weights - old.weights).max())
    )


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
    grid = None
    if opts.pi_update == "grid":
        nodes = simplex_grid(start.weights.shape[0])
        grid = (nodes, grid_log_omega(graph.omega, nodes))
    params = start
    chain = _Chain()
    scale = float(X.std(axis=0).max()) or 1.0
    history: list[float] = []
    converged = cancelled = False
    n_iter = 0
    stochastic = graph.gibbs_nodes.shape[0] > 0
    for n_iter in range(1, opts.max_iter + 1):
        est = e_step(X, params, graph, opts, chain, rng)
        new = m_step(X, est.resp, params, graph, opts, grid)
        if stochastic:
            converged = _parameter_change(params, new, scale) < opts.tol
        elif history:
            converged = abs(est.bound - history[-1]) <= opts.tol * max(1.0, abs(est.bound))
        params = new
        history.append(est.bound)
        if progress is not None and progress(iteration0 + n_iter, -est.bound) is False:
            cancelled = True
            break
        if converged:
            break
    final = e_step(X, params, graph, opts, chain, rng)
    return PPCResult(params, final, n_iter, converged, cancelled, history)


def check_feasible(graph: RelationGraph, m: int) -> None:
    """Every exactly solved component must admit a labelling satisfying its hard do-not-links."""
    if not graph.exact.n_enum:
        return
    a = np.zeros((graph.n_super, m))
    _, enum_logz = solve_exact(graph.exact, a, np.empty_like(a), np.zeros(graph.n_super, np.int64))
    for c in np.flatnonzero(enum_logz == -np.inf):
        nodes = graph.exact.enum_nodes[graph.exact.enum_ptr[c] : graph.exact.enum_ptr[c + 1]]
        inside = np.isin(graph.super_of[graph.dnl_i], nodes)
        i, j = int(graph.dnl_i[inside][0]), int(graph.dnl_j[inside][0])
        raise ValueError(
            f"the hard do-not-links around pair ({i}, {j}) cannot all hold with "
            f"n_components={m} (no labelling of their component satisfies them); increase "
            "n_components or remove some of them"
        )
