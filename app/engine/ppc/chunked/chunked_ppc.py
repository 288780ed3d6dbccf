"""``PPC.fit`` on a ``dask.array.Array``: EM with the E-step per chunk and the moments reduced.

Rows joined by relations are taken out of their chunks and solved together in relation groups
(``relation_groups.py``: whole connected components, so every relation is resolved inside one
task by PPC's own E-step engines); every other row's E-step is the mixture posterior, per
chunk. Each pass sums per component the soft count, sum and scatter (``mixture_stats.py``) and
the E-steps' log partitions; the driver runs the M-step (pi by the prior's Omega over the
related rows' components, as the in-memory fit) and the in-memory fit's stopping rule
(``ppc.fit.StopRule``). With exact E-steps this is the in-memory EM, step for step (tested).

The start is PPC itself fitted on one machine on a sample of the rows plus whole relation
components (``n_init``, ``covariance='auto'``'s choice and the labeled seeding decided there),
or, with ``warm_start``, the mixture fitted before. ``labels_`` and ``resp_`` are lazy dask
arrays computed chunk by chunk from the fitted mixture (related rows from their groups' final
E-step); ``execution_`` says how the fit ran.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.chunked_input import (
    ChunkedInput,
    as_rows,
    is_dask_array,
    scan,
    to_workers,
)
from app.engine.core.validation import check_choice, check_int
from app.engine.fit_warnings import reset_fit_warnings
from app.engine.ppc.chunked.mixture_stats import MixtureStats
from app.engine.ppc.chunked.ppc_results import lazy_labels_and_marginals
from app.engine.ppc.chunked.ppc_tasks import (
    ChunkEStep,
    GroupEStep,
    MixtureRule,
    chunk_estep,
    group_estep,
)
from app.engine.ppc.chunked.relation_groups import (
    RelatedRows,
    excluded_per_chunk,
    local_relations,
    related_rows,
)
from app.engine.ppc.fit import (
    Options,
    Params,
    StopRule,
    _Chain,
    check_feasible,
    mixture_from,
    pi_grid,
)
from app.engine.ppc.graph import E_STEPS, build_graph
from app.engine.ppc.prior import log_omega
from app.engine.ppc.relations import Relations, check_labels, check_relations
from app.engine.ppc.select import COVARIANCES, agreement, agreement_share, family_of

# Related rows the start's sample may hold (whole relation components, in order).
START_RELATED_ROWS = 20_000


@dataclass
class _Related:
    """The related rows of a fit, their rows' features and their groups as the tasks get them."""

    rows: RelatedRows | None
    X: FloatArray  # (r, d) features of ``rows.rows``
    group_inputs: list[tuple[Any, Any]] = field(default_factory=list)  # (X, group), maybe futures

    @property
    def groups(self) -> list[Any]:
        return [] if self.rows is None else self.rows.groups


@dataclass
class _Pass:
    stats: MixtureStats
    agree: int
    groups: list[GroupEStep]


def _labels_in_memory(labels: Any) -> Any:
    if labels is None:
        return None
    values = labels.compute() if is_dask_array(labels) else labels
    return np.asarray(values)


def _relations_as_pairs(rel: Relations, index: IntArray) -> tuple[IntArray, FloatArray]:
    """``rel`` among the rows ``index`` maps (to their positions there, -1: left out) as PPC's
    pairs and weights (W = J / 2; hard ones +-inf)."""
    parts = [
        (rel.soft_i, rel.soft_j, rel.soft_J / 2.0),
        (rel.link_i, rel.link_j, np.full(rel.link_i.shape[0], np.inf)),
        (rel.dnl_i, rel.dnl_j, np.full(rel.dnl_i.shape[0], -np.inf)),
    ]
    pairs, weights = [], []
    for i, j, w in parts:
        keep = (index[i] >= 0) & (index[j] >= 0)
        pairs.append(np.stack([index[i[keep]], index[j[keep]]], axis=1))
        weights.append(w[keep])
    return np.concatenate(pairs).astype(np.int64), np.concatenate(weights)


def _sample_fit(
    estimator: Any,
    data: ChunkedInput,
    related: _Related,
    rel: Relations,
    known: IntArray | None,
    rng: np.random.RandomState,
) -> Any:
    """PPC fitted on the scan's sample (related rows left out) plus whole relation groups."""
    taken: list[IntArray] = []
    budget = START_RELATED_ROWS
    for group in related.groups:
        if group.rows.shape[0] > budget:
            break
        taken.append(group.rows)
        budget -= group.rows.shape[0]
    rows = np.concatenate(taken) if taken else np.empty(0, dtype=np.int64)
    related_rows_all = related.rows.rows if related.rows is not None else rows
    plain = ~np.isin(data.sample_index, related_rows_all)
    position = np.searchsorted(related_rows_all, rows)
    X = np.concatenate([data.sample[plain], related.X[position]])
    y = None
    if known is not None:
        assert data.sample_y is not None
        y = np.concatenate([data.sample_y[plain], known[rows].astype(np.int64)])
    # Relations among the related rows' positions (not row ids: a dense index up to the last
    # related row was 160 MB at 20M rows, on the run's worker).
    ends = _related_ends(rel)
    index = np.full(ends.shape[0], -1, dtype=np.int64)
    index[np.searchsorted(ends, rows)] = int(np.count_nonzero(plain)) + np.arange(rows.shape[0])
    pairs, weights = _relations_as_pairs(local_relations(rel, ends), index)
    params = {**estimator.get_params(deep=False), "progress": None, "warm_start": False}
    params["random_state"] = rng.randint(np.iinfo(np.int32).max)
    params["fresh_starts"] = "always"
    start = type(estimator)(**params)
    with warnings.catch_warnings():  # the sample's convergence is not the fit's
        warnings.simplefilter("ignore")
        start.fit(
            X,
            pairs=pairs if pairs.shape[0] else None,
            weights=weights if pairs.shape[0] else None,
            labels=y,
        )
    return start


def _related_ends(rel: Relations) -> IntArray:
    """The rows in some relation, sorted."""
    ends = [rel.soft_i, rel.soft_j, rel.link_i, rel.link_j, rel.dnl_i, rel.dnl_j]
    return np.unique(np.concatenate(ends)).astype(np.int64)


def _gather_related(X: Any, related: RelatedRows | None) -> _Related:
    if related is None:
        return _Related(None, np.empty((0, X.shape[1])))
    rows_X = np.asarray(X[related.rows].compute(), dtype=np.float64)
    inputs = []
    for group in related.groups:
        at = np.searchsorted(related.rows, group.rows)
        inputs.append((np.ascontiguousarray(rows_X[at]), group))
    flat = to_workers([part for pair in inputs for part in pair])
    paired = [(flat[2 * q], flat[2 * q + 1]) for q in range(len(inputs))]
    return _Related(related, rows_X, paired)


def _run_pass(
    data: ChunkedInput,
    excluded: list[IntArray],
    related: _Related,
    rule: MixtureRule,
    opts: Options,
    chains: list[_Chain],
    seeds: IntArray,
    scale: float,
    final: bool,
) -> _Pass:
    """One E-step over every chunk and every relation group; statistics added in order."""
    import dask

    rule_node = dask.delayed(rule, traverse=False)
    chunk_tasks = [
        dask.delayed(chunk_estep)(block, y_block, exclude, rule_node)
        for block, y_block, exclude in zip(data.blocks, data.y_blocks, excluded, strict=True)
    ]
    group_tasks = [
        dask.delayed(group_estep)(X, group, rule_node, opts, chain, int(seed), scale, final)
        for (X, group), chain, seed in zip(related.group_inputs, chains, seeds, strict=True)
    ]
    results = dask.compute(*chunk_tasks, *group_tasks)
    chunks: list[ChunkEStep] = list(results[: len(chunk_tasks)])
    groups: list[GroupEStep] = list(results[len(chunk_tasks) :])
    total = MixtureStats.zeros(rule.means, rule.family)
    for part in [*(c.stats for c in chunks), *(g.stats for g in groups)]:
        total.add(part)
    return _Pass(total, sum(c.agree for c in chunks), groups)


def _check_params(estimator: Any, n: int) -> tuple[int, str, int]:
    m = check_int("n_components", estimator.n_components, 1, n)
    e_step = check_choice("e_step", estimator.e_step, E_STEPS)
    max_states = check_int("max_exact_states", estimator.max_exact_states, 1)
    check_int("n_init", estimator.n_init, 1)
    check_choice("covariance", estimator.covariance, list(COVARIANCES))
    if estimator.progress is not None and not callable(estimator.progress):
        raise ValueError(f"progress must be a callable or None, got {estimator.progress!r}")
    return m, e_step, max_states


def fit_chunked_ppc(estimator: Any, X: Any, pairs: Any, weights: Any, labels: Any) -> None:
    """Fit ``estimator`` (a ``PPC``) data-parallel on the dask array ``X`` with relations
    (in memory) and labels (a NumPy or dask array, one per row, or None)."""
    X = as_rows(X)
    n = int(X.shape[0])
    m, e_step, max_states = _check_params(estimator, n)
    reset_fit_warnings(estimator)
    rel = check_relations(pairs, weights, n)
    given = _labels_in_memory(labels)
    known = None if given is None else check_labels(given, n, m, rel, as_int64=False)
    has_relations = _related_ends(rel).shape[0] > 0
    related_plan = related_rows(rel, known, m, e_step, max_states) if has_relations else None
    graph = (
        related_plan.graph
        if related_plan is not None
        else build_graph(rel, 0, m, e_step, max_states)
    )
    if related_plan is not None:
        check_feasible(graph, m, names=related_plan.rows)
    rng = check_random_state(estimator.random_state)
    data = scan(X, known, m, rng)
    related = _gather_related(X, related_plan)
    previous = estimator._previous_fit(data.sample, m) or _given_start(estimator, m, X.shape[1])
    if previous is not None:
        covariance, start = previous
        sample_rows = 0
    else:
        fitted = _sample_fit(estimator, data, related, rel, known, rng)
        covariance = fitted.covariance_
        start = Params(
            fitted.weights_, fitted.means_, fitted.covariances_, fitted.precisions_cholesky_
        )
        sample_rows = int(fitted.labels_.shape[0])
    opts = estimator._options(graph, covariance)
    fit = _em(data, related, graph, opts, start, rng, estimator.progress, m, n)
    _store(estimator, data, related, fit, opts, covariance, rel, known)
    estimator.warm_started_ = previous is not None
    estimator.execution_ = {
        "execution": "data-parallel",
        "chunks": len(data.blocks),
        "relation_groups": len(related.groups),
        "related_rows": 0 if related.rows is None else int(related.rows.rows.shape[0]),
        "passes": fit.n_iter + 1,
        "start_sample_rows": sample_rows,
    }


def _given_start(estimator: Any, m: int, d: int) -> tuple[str, Params] | None:
    """``weights_init``, ``means_init`` and ``covariances_init`` all given, for a covariance
    model named: the passes start there (as the in-memory fit's one start would)."""
    given = (estimator.weights_init, estimator.means_init, estimator.covariances_init)
    if any(part is None for part in given) or estimator.covariance == "auto":
        return None
    family = family_of(check_choice("covariance", estimator.covariance, list(COVARIANCES)))[0]
    return estimator.covariance, estimator.given_start(None, m, d, family)


@dataclass
class _EMFit:
    params: Params
    final: _Pass
    bound: float
    history: list[float]
    n_iter: int
    converged: bool
    cancelled: bool


def _em(
    data: ChunkedInput,
    related: _Related,
    graph: Any,
    opts: Options,
    start: Params,
    rng: np.random.RandomState,
    progress: Any,
    m: int,
    n: int,
) -> _EMFit:
    """EM from ``start``: passes until the stopping rule, ``max_iter`` or a cancel; then the
    final E-step (labels refined by ICM in the groups), as ``ppc.fit.run_em``."""
    excluded = excluded_per_chunk(
        related.rows.rows if related.rows is not None else np.empty(0, np.int64), data.rows
    )
    grid = pi_grid(opts, graph, m)
    stop = StopRule(graph, opts, data.spread)
    chains = [_Chain() for _ in related.groups]
    params = start
    history: list[float] = []
    converged = cancelled = False
    n_iter = 0

    def e_step(params: Params, scale: float, final: bool) -> tuple[_Pass, float]:
        rule = MixtureRule.of(params, opts)
        seeds = rng.randint(np.iinfo(np.int32).max, size=len(chains))
        done = _run_pass(data, excluded, related, rule, opts, chains, seeds, scale, final)
        for q, group in enumerate(done.groups):
            chains[q] = group.chain
        bound = (done.stats.log_z - log_omega(graph.omega, params.weights)) / n
        return done, bound

    for n_iter in range(1, opts.max_iter + 1):
        schedule = stop.schedule
        done, bound = e_step(params, schedule.scale, False)
        moments = done.stats.m_step(opts.family, opts.reg_covar)
        new = mixture_from(moments, params, graph.omega, opts, grid, schedule.pi_rule())
        converged = stop.converged(bound, params, new)
        params = new
        history.append(bound)
        if progress is not None and progress(n_iter, -bound) is False:
            cancelled = True
            break
        if converged:
            break
    final, bound = e_step(params, 1.0, True)
    return _EMFit(params, final, bound, history, n_iter, converged, cancelled)


def _store(
    estimator: Any,
    data: ChunkedInput,
    related: _Related,
    fit: _EMFit,
    opts: Options,
    covariance: str,
    rel: Relations,
    known: IntArray | None,
) -> None:
    params = fit.params
    rule = MixtureRule.of(params, opts)
    related_rows_all = (
        related.rows.rows if related.rows is not None else np.empty(0, dtype=np.int64)
    )
    group_labels = np.empty(related_rows_all.shape[0], dtype=np.int64)
    group_resp = np.empty((related_rows_all.shape[0], params.means.shape[0]))
    for group, done in zip(related.groups, fit.final.groups, strict=True):
        at = np.searchsorted(related_rows_all, group.rows)
        assert done.labels is not None and done.resp is not None
        group_labels[at] = done.labels
        group_resp[at] = done.resp
    labels, resp = lazy_labels_and_marginals(data, related_rows_all, group_labels, group_resp, rule)
    estimator.weights_ = params.weights
    estimator.means_ = params.means
    estimator.covariances_ = params.covariances
    estimator.precisions_cholesky_ = params.prec_chol
    estimator.covariance_ = covariance
    estimator.labels_ = labels
    estimator.resp_ = resp
    estimator.lower_bound_ = fit.bound
    estimator.lower_bound_history_ = fit.history
    estimator.n_iter_ = fit.n_iter
    estimator.converged_ = fit.converged
    estimator.n_features_in_ = int(params.means.shape[1])
    estimator.agreement_ = _agreement(related, params, opts, rel, known, fit.final.agree)
    if not fit.converged and not fit.cancelled:
        from sklearn.exceptions import ConvergenceWarning

        from app.engine.fit_warnings import warn_fit

        warn_fit(
            estimator,
            f"PPC did not converge within max_iter={opts.max_iter} EM iterations; increase "
            "max_iter or tol",
            ConvergenceWarning,
            stacklevel=4,
        )


def _agreement(
    related: _Related,
    params: Params,
    opts: Options,
    rel: Relations,
    known: IntArray | None,
    agree_in_chunks: int,
) -> float:
    """``agreement_`` as the in-memory fit's: the share of relations and labels the fitted
    mixture's own labels respect (labels of unrelated rows counted in the final pass)."""
    score = float(agree_in_chunks)
    if related.rows is not None:
        rows = related.rows.rows  # sorted: the relations' ends become positions in it
        plain = MixtureRule.of(params, opts).log_scores(related.X).argmax(axis=1)
        own = (
            known[rows].astype(np.int64)
            if known is not None
            else np.full(rows.shape[0], -1, dtype=np.int64)
        )
        score += agreement(plain, local_relations(rel, rows), own)
    labels = known if known is not None else np.empty(0, dtype=np.int64)
    return agreement_share(score, rel, labels)
