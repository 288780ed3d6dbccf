"""The C3L fit (spec c3l.md Sec. 3): Hartigan CEC on the product family N(mu, s^2) x N(m, S).

A cluster's cost is E = p (-ln p + H_x + C_eps), where H_x is the core ``full`` (or other)
family cost of its rows of X, and C_eps the constrained 1-D cost of its side scores (Theorem 1,
``_c3l_cost``). The X part is the core CEC state; C3L keeps the side-score moments beside it
(with the core ``add_point`` / ``remove_point`` on 1-D moments) and adds the change of
p C_eps to the exact core deltas (``point_move_deltas`` with ``prune_above = inf``), the extension
hook documented in ``_hartigan``. The side variance gets a ridge of 1e-6 x the variance of all
scores, so clusters whose scores are constant (scores derived from labels) stay finite.

Initialisation is side-aware by default (spec Sec. 3.3): the k clusters are split between the two
sides in proportion to their sizes (at least one each), with k-means++ seeds within each side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import FloatArray, IntArray
from app.engine.c3l.cost import constrained_fit, leakage_of, side_cost
from app.engine.core.cec_fit import SingularDataError, min_cluster_size
from app.engine.core.cec_state import ClusterState, new_state, recompute_state, total_energy
from app.engine.core.families import family_covariances
from app.engine.core.hartigan import (
    UNCHANGED,
    SweepClock,
    changes_since,
    cheapest_move,
    extract_point,
    insert_point,
    kill_cluster,
    mark_all_changed,
    n_alive,
    new_clock,
    point_move_deltas,
)
from app.engine.core.int_args import minus_one
from app.engine.core.moments import add_point, moments_from_labels, remove_point
from app.engine.core.seeding import (
    assign_nearest_seed,
    greedy_trials,
    initial_partition,
    kmeanspp_seeds,
)
from app.engine.progress import Progress, asks_to_stop

SIDE_RIDGE = 1e-6


class Side(NamedTuple):
    """Side-score moments of every cluster slot and its term p C_eps."""

    mean: FloatArray  # (k, 1)
    var: FloatArray  # (k, 1, 1) MLE variance
    term: FloatArray  # (k,) p * C_eps(mean, var + ridge); 0 for dead or empty slots
    size: FloatArray  # (k,) scratch for the from-scratch recomputation


@numba.njit(nogil=True, cache=True)
def side_term(
    size: float, mean: float, var: float, q: float, ridge: float, n_total: float
) -> float:
    if size <= 0.0:
        return 0.0
    return size / n_total * side_cost(mean, max(var, 0.0) + ridge, q)


@numba.njit(nogil=True, cache=True)
def _term_after(
    size: float, mean: float, var: float, s: float, sign: float, q: float, ridge: float,
    n_total: float,
) -> float:  # fmt: skip
    """p C_eps of a cluster after adding (sign = +1) or removing (-1) the score ``s``."""
    new = size + sign
    if new <= 0.0:
        return 0.0
    if size <= 0.0:
        return side_term(new, s, 0.0, q, ridge, n_total)
    u = s - mean
    new_mean = mean + sign * u / new
    new_var = size / new * (var + sign * u * u / new)
    return side_term(new, new_mean, new_var, q, ridge, n_total)


@numba.njit(nogil=True, cache=True)
def add_side_deltas(
    s: float, a: int, state: ClusterState, side: Side, q: float, ridge: float, n_total: float,
    delta: FloatArray,
) -> None:  # fmt: skip
    """Add the change of sum_c p_c C_eps to every finite ``delta[j]`` (a = -1: insertion)."""
    leave = 0.0
    if a >= 0:
        leave = (
            _term_after(state.size[a], side.mean[a, 0], side.var[a, 0, 0], s, -1.0, q, ridge,
                        n_total)
            - side.term[a]
        )  # fmt: skip
    for j in range(delta.shape[0]):
        if j == a or not math.isfinite(delta[j]):
            continue
        join = _term_after(
            state.size[j], side.mean[j, 0], side.var[j, 0, 0], s, 1.0, q, ridge, n_total
        )
        delta[j] += leave + join - side.term[j]


@numba.njit(nogil=True, cache=True)
def _insert(
    X: FloatArray, S: FloatArray, i: int, c: int, state: ClusterState, side: Side, family: int,
    q: float, ridge: float, n_total: float, work: FloatArray,
) -> None:  # fmt: skip
    size = add_point(side.mean[c], side.var[c], state.size[c], S[i], 1.0)
    side.term[c] = side_term(size, side.mean[c, 0], side.var[c, 0, 0], q, ridge, n_total)
    insert_point(X[i], minus_one(), c, state, family, n_total, 0.0, work)


@numba.njit(nogil=True, cache=True)
def _extract(
    X: FloatArray, S: FloatArray, i: int, c: int, state: ClusterState, side: Side, family: int,
    q: float, ridge: float, n_total: float, work: FloatArray,
) -> None:  # fmt: skip
    size = remove_point(side.mean[c], side.var[c], state.size[c], S[i], 1.0)
    side.term[c] = side_term(size, side.mean[c, 0], side.var[c, 0, 0], q, ridge, n_total)
    extract_point(X[i], minus_one(), c, state, family, n_total, 0.0, work)


@numba.njit(nogil=True, cache=True)
def reinsert_orphans(
    X: FloatArray, S: FloatArray, assign: IntArray, state: ClusterState, side: Side,
    family: int, q: float, ridge: float, n_total: float, work: FloatArray,
) -> None:  # fmt: skip
    """Insert every point of a dead cluster, in index order, where the energy grows least."""
    u = np.empty(X.shape[1])
    delta = np.empty(state.size.shape[0])
    no_clock = np.empty(0, dtype=np.int64)
    for i in range(X.shape[0]):
        if state.alive[assign[i]]:
            continue
        none = minus_one()  # not the literal -1: one compiled specialisation, not two
        point_move_deltas(X, i, none, none, state, family, n_total, 0.0, math.inf, no_clock, none,
                          delta, u)  # fmt: skip
        add_side_deltas(S[i, 0], none, state, side, q, ridge, n_total, delta)
        b = minus_one()
        for j in range(delta.shape[0]):
            if state.alive[j] and (b < 0 or delta[j] < delta[b]):
                b = j
        _insert(X, S, i, b, state, side, family, q, ridge, n_total, work)
        assign[i] = b


@numba.njit(nogil=True, cache=True)
def _kill(state: ClusterState, side: Side, c: int) -> None:
    kill_cluster(state, c)
    side.mean[c, 0] = 0.0
    side.var[c, 0, 0] = 0.0
    side.term[c] = 0.0


@numba.njit(nogil=True, cache=True)
def _invalid(state: ClusterState, side: Side, c: int, min_size: float) -> bool:
    return (
        state.size[c] < min_size
        or not math.isfinite(state.entropy[c])
        or not math.isfinite(side.term[c])
    )


@numba.njit(nogil=True, cache=True)
def c3l_sweep(
    X: FloatArray, S: FloatArray, assign: IntArray, state: ClusterState, side: Side,
    family: int, q: float, ridge: float, n_total: float, min_size: float, tol: float,
    clock: SweepClock, work: FloatArray,
) -> int:  # fmt: skip
    """One pass over the points in index order; returns the number of accepted moves.

    A move's change of both the X part and p C_eps depends only on its source and target
    clusters, so the core's ``SweepClock`` skips, exactly, the evaluations whose answer cannot
    have changed since the point last found no improving move.
    """
    k = state.size.shape[0]
    u = np.empty(X.shape[1])
    delta = np.empty(k)
    moves = 0
    for i in range(X.shape[0]):
        a = assign[i]
        since = changes_since(a, i, state, clock)
        if since == UNCHANGED:
            continue
        point_move_deltas(X, i, minus_one(), a, state, family, n_total, 0.0, math.inf,
                          clock.changed_at, since, delta, u)  # fmt: skip
        add_side_deltas(S[i, 0], a, state, side, q, ridge, n_total, delta)
        b = cheapest_move(delta, a, tol)
        if b == a:
            clock.checked_at[i] = clock.tick[0]
            continue
        _extract(X, S, i, a, state, side, family, q, ridge, n_total, work)
        _insert(X, S, i, b, state, side, family, q, ridge, n_total, work)
        assign[i] = b
        moves += 1
        clock.tick[0] += 1
        clock.changed_at[a] = clock.tick[0]
        clock.changed_at[b] = clock.tick[0]
        if _invalid(state, side, a, min_size) and n_alive(state) > 1:
            _kill(state, side, a)
            reinsert_orphans(X, S, assign, state, side, family, q, ridge, n_total, work)
            mark_all_changed(clock)
    return moves


@numba.njit(nogil=True, cache=True)
def remove_invalid(
    X: FloatArray, S: FloatArray, assign: IntArray, state: ClusterState, side: Side,
    family: int, q: float, ridge: float, n_total: float, min_size: float, work: FloatArray,
) -> int:  # fmt: skip
    """Remove every live cluster that is too small or singular (if none is valid, all but the
    largest); returns how many were removed."""
    k = state.size.shape[0]
    largest = -1
    n_valid = 0
    for c in range(k):
        if state.alive[c]:
            if not _invalid(state, side, c, min_size):
                n_valid += 1
            if largest < 0 or state.size[c] > state.size[largest]:
                largest = c
    removed = 0
    for c in range(k):
        if state.alive[c] and _invalid(state, side, c, min_size) and (n_valid > 0 or c != largest):
            _kill(state, side, c)
            removed += 1
    if removed > 0:
        reinsert_orphans(X, S, assign, state, side, family, q, ridge, n_total, work)
    return removed


def _recompute(
    X: FloatArray, S: FloatArray, assign: IntArray, state: ClusterState, side: Side,
    family: int, q: float, ridge: float,
) -> None:  # fmt: skip
    """Both parts of the statistics from scratch (removes incremental drift)."""
    n = float(X.shape[0])
    recompute_state(X, assign, np.full(X.shape[0], -1, dtype=np.int64), state, family, n, 0.0)
    moments_from_labels(S, assign, side.size, side.mean, side.var)
    for c in range(side.term.shape[0]):
        live = state.alive[c] and side.size[c] > 0
        side.term[c] = (
            side_term(side.size[c], side.mean[c, 0], side.var[c, 0, 0], q, ridge, n)
            if live
            else 0.0
        )


def _energy(state: ClusterState, side: Side) -> float:
    return total_energy(state) + float(side.term[state.alive].sum())


def side_aware_partition(
    X: FloatArray, positive: NDArray[np.bool_], n_clusters: int, rng: np.random.RandomState
) -> IntArray:
    """k-means++ within each side, clusters shared in proportion to the side sizes."""
    n = X.shape[0]
    n_pos = int(positive.sum())
    if n_clusters < 2 or n_pos in (0, n):
        return initial_partition(X, n_clusters, "k-means++", rng)
    k_pos = min(max(round(n_clusters * n_pos / n), 1), n_clusters - 1)
    assign = np.empty(n, dtype=np.int64)
    for rows, k_side, offset in ((positive, k_pos, 0), (~positive, n_clusters - k_pos, k_pos)):
        Y = np.ascontiguousarray(X[rows])
        seeds = np.zeros(k_side, dtype=np.int64)
        found = kmeanspp_seeds(Y, rng.uniform(size=(k_side, greedy_trials(k_side))), seeds)
        part = np.empty(Y.shape[0], dtype=np.int64)
        assign_nearest_seed(Y, seeds[:found], part)
        assign[rows] = part + offset
    return assign


@dataclass
class C3LResult:
    """A fitted partition with clusters numbered 0..k'-1 by first occurrence."""

    labels: IntArray
    energy: float
    weights: FloatArray
    means: FloatArray  # (k', d) of the X factor
    covariances: FloatArray  # of the X factor, in GaussianMixture's shapes
    side_means: FloatArray  # (k',) mu of the constrained 1-D factor N(mu, s^2)
    side_stds: FloatArray  # (k',) s
    leakage: FloatArray
    sides: IntArray  # +1 / -1: the side holding at least 1 - eps of each cluster's density
    n_iter: int
    converged: bool
    cancelled: bool
    energy_history: list[float] = field(default_factory=list)


@dataclass
class _Run:
    assign: IntArray
    state: ClusterState
    side: Side
    energy: float
    n_iter: int
    converged: bool
    history: list[float]


def _start(
    X: FloatArray, S: FloatArray, n_clusters: int, family: int, q: float, ridge: float,
    min_size: float, init: str, rng: np.random.RandomState, work: FloatArray,
) -> tuple[IntArray, ClusterState, Side]:  # fmt: skip
    n, d = X.shape
    if init == "side":
        assign = side_aware_partition(X, S[:, 0] >= 0.0, n_clusters, rng)
    else:
        assign = initial_partition(X, n_clusters, "k-means++", rng)
    state = new_state(n_clusters, d, 0)
    state.alive[:] = np.bincount(assign, minlength=n_clusters) > 0
    side = Side(
        np.zeros((n_clusters, 1)), np.zeros((n_clusters, 1, 1)), np.zeros(n_clusters),
        np.zeros(n_clusters),
    )  # fmt: skip
    _recompute(X, S, assign, state, side, family, q, ridge)
    remove_invalid(X, S, assign, state, side, family, q, ridge, float(n), min_size, work)
    alive = np.nonzero(state.alive)[0]
    if alive.shape[0] == 1 and not math.isfinite(state.entropy[alive[0]]):
        raise SingularDataError(
            "the covariance of X is singular, so no cluster has a finite cost; remove constant "
            "or linearly dependent features (e.g. with PCA) or use covariance='diagonal' or "
            "'spherical'"
        )
    return assign, state, side


def _run(
    X: FloatArray, S: FloatArray, *, n_clusters: int, family: int, q: float, ridge: float,
    min_size: float, max_iter: int, tol: float, init: str, rng: np.random.RandomState,
    progress: Progress | None, first_iteration: int,
) -> tuple[_Run, bool]:  # fmt: skip
    n, d = X.shape
    work = np.empty(3 * d)
    assign, state, side = _start(X, S, n_clusters, family, q, ridge, min_size, init, rng, work)
    clock = new_clock(n, n_clusters)
    history: list[float] = []
    converged = stop = False
    sweeps = 0
    for sweeps in range(1, max_iter + 1):
        moves = c3l_sweep(
            X, S, assign, state, side, family, q, ridge, float(n), min_size, tol, clock, work
        )
        _recompute(X, S, assign, state, side, family, q, ridge)
        removed = remove_invalid(
            X, S, assign, state, side, family, q, ridge, float(n), min_size, work
        )
        if removed > 0:
            mark_all_changed(clock)
        energy = _energy(state, side)
        history.append(energy)
        stop = asks_to_stop(progress, first_iteration + sweeps, energy)
        if moves == 0 and removed == 0:
            converged = True
            break
        if stop:
            break
    return _Run(assign, state, side, _energy(state, side), sweeps, converged, history), stop


def _result(run: _Run, family: int, q: float, ridge: float, cancelled: bool) -> C3LResult:
    _, first = np.unique(run.assign, return_index=True)
    order = run.assign[np.sort(first)]
    relabel = np.full(run.state.size.shape[0], -1, dtype=np.int64)
    relabel[order] = np.arange(order.shape[0])
    leakage = np.empty(order.shape[0])
    sides = np.empty(order.shape[0], dtype=np.int64)
    side_means = np.empty(order.shape[0])
    side_stds = np.empty(order.shape[0])
    for r, c in enumerate(order):
        mean = float(run.side.mean[c, 0])
        var = max(float(run.side.var[c, 0, 0]), 0.0) + ridge
        leakage[r] = leakage_of(mean, var, q)
        side_means[r], side_stds[r] = constrained_fit(mean, var, q)
        sides[r] = 1 if side_means[r] >= 0.0 else -1
    return C3LResult(
        labels=relabel[run.assign],
        energy=run.energy,
        weights=run.state.size[order] / run.assign.shape[0],
        means=run.state.mean[order].copy(),
        covariances=family_covariances(family, run.state.cov[order]),
        side_means=side_means,
        side_stds=side_stds,
        leakage=leakage,
        sides=sides,
        n_iter=run.n_iter,
        converged=run.converged,
        cancelled=cancelled,
        energy_history=run.history,
    )


def fit_c3l(
    X: FloatArray,
    scores: FloatArray,
    *,
    n_clusters: int,
    q: float,
    family: int,
    min_cluster_fraction: float,
    n_init: int,
    max_iter: int,
    tol: float,
    init: str,
    rng: np.random.RandomState,
    progress: Progress | None = None,
) -> C3LResult:
    """Best of ``n_init`` C3L Hartigan runs; ``scores >= 0`` is the positive side."""
    n, d = X.shape
    S = np.ascontiguousarray(scores, dtype=np.float64).reshape(n, 1)
    spread = float(np.var(scores))
    ridge = SIDE_RIDGE * (spread if spread > 0.0 else 1.0)
    min_size = min_cluster_size(n, d, family, min_cluster_fraction)
    best: _Run | None = None
    iteration = 0
    stop = False
    for _ in range(n_init):
        run, stop = _run(
            X, S, n_clusters=n_clusters, family=family, q=q, ridge=ridge, min_size=min_size,
            max_iter=max_iter, tol=tol, init=init, rng=rng, progress=progress,
            first_iteration=iteration,
        )  # fmt: skip
        iteration += run.n_iter
        if best is None or run.energy < best.energy:
            best = run
        if stop:
            break
    assert best is not None
    return _result(best, family, q, ridge, stop)
