"""Hartigan optimisation of CEC / CEC-IB: move evaluation, moves, cluster removal, one sweep.

Building blocks, all O(k d^2) or better per point (spec cec-ib.md Sec. 3.3):

* ``point_move_deltas`` fills ``delta[j]``, the exact energy change of moving one point from its
  cluster a to cluster j (``delta[a] = 0``; ``+inf`` for dead slots and moves that would make a
  covariance singular);
* ``extract_point`` / ``insert_point`` apply a move with rank-one updates of moments and
  Cholesky factors and O(1) label-count updates;
* ``dissolve_cluster`` kills a cluster and inserts its points one at a time where the energy
  grows least (spec decision 7.3: immediate greedy reinsertion);
* ``group_move_deltas`` / ``extract_group`` / ``insert_group`` do the same for an unlabeled
  weighted group (a chunklet moved as one block, spec c4s.md Sec. 2.3): O(k d^3) per evaluation,
  since the change of S is not rank-one;
* ``hartigan_sweep`` is one pass over the points in index order, skipping (exactly, via
  ``SweepClock``) points whose clusters did not change since they were last checked.

Methods built on CEC (C4S, C3L) write their own sweep from the same blocks: call
``point_move_deltas`` with ``prune_above = inf`` (exact deltas), add their extra cost change to
``delta`` and set ``delta[j] = inf`` for moves their validity check forbids, before picking the
argmin. numba cannot cache kernels that take functions as arguments, so the
extension point is the ``delta`` array rather than a callback.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.cec_state import (
    ClusterState,
    cluster_energy,
    label_entropy_after,
    refresh_energy,
    update_labels,
)
from app.engine.core.families import (
    FULL,
    HALF_LOG_2PIE,
    family_entropy,
    join_log_factor_bound,
    log_factor,
    nonsingular_points,
)
from app.engine.core.int_args import minus_one, plus_one
from app.engine.core.linalg import cholesky_rank_one, half_logdet, invert_lower
from app.engine.core.moments import add_group, add_point, remove_group, remove_point


@numba.njit(nogil=True, cache=True)
def point_move_deltas(
    X: FloatArray,
    i: int,
    category: int,
    a: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    prune_above: float,
    changed_at: IntArray,
    since: int,
    delta: FloatArray,
    u: FloatArray,
) -> None:
    """``delta[j]`` = E(a - x) + E(j + x) - E(a) - E(j) for x = X[i] and every slot j.

    ``delta[a] = 0``; ``a = -1`` means x is in no cluster, so ``delta[j]`` = E(j + x) - E(j).
    Dead slots and moves that would make a covariance singular get +inf. With ``since >= 0``
    only slots with ``changed_at[j] > since`` are evaluated, the others get +inf; ``since < 0``
    evaluates every slot and does not read ``changed_at``. With ``prune_above = inf`` every
    evaluated entry is exact; otherwise an entry that provably is not below min(prune_above,
    every entry computed before it) may be +inf instead: a lower bound in O(d) without
    logarithm is tried first, so far-away clusters cost no matrix-vector product (the sweep
    passes -tol, so only candidate moves are evaluated in full). ``u`` holds d scratch values.

    One flat function on purpose: rows and clusters are addressed by index, and no helper takes
    the state, because a slice or a call with the whole state costs more than the arithmetic.
    """
    d = X.shape[1]
    k = delta.shape[0]
    d_leave = 0.0
    if a >= 0:
        size = state.size[a]
        if size <= 1.0:
            d_leave = state.leave_const[a]
        elif size - 1.0 < nonsingular_points(family, d):
            d_leave = math.inf
        else:
            for t in range(d):
                u[t] = X[i, t] - state.mean[a, t]
            f = log_factor(family, u, state.cov, state.chol_inv, a, 1.0 / (size - 1.0), -1.0)
            h = label_entropy_after(state, a, category, minus_one()) if beta != 0.0 else 0.0
            p = (size - 1.0) / n_total
            d_leave = state.leave_const[a] + p * (0.5 * f + beta * h)
    pruning = prune_above < math.inf
    best = prune_above
    for j in range(k):
        if j == a:
            delta[j] = 0.0
            continue
        if (
            not state.alive[j]
            or not math.isfinite(d_leave)
            or (since >= 0 and changed_at[j] <= since)
        ):
            delta[j] = math.inf
            continue
        size = state.size[j]
        for t in range(d):
            u[t] = X[i, t] - state.mean[j, t]
        p = (size + 1.0) / n_total
        coef = 1.0 / (size + 1.0)
        base = d_leave + state.join_const[j]
        h = state.label_h[j]
        if pruning:
            h_low = h if category < 0 else 0.0
            f_low = join_log_factor_bound(family, u, state.cov, j, state.spread[j], coef)
            if base + p * (0.5 * f_low + beta * h_low) >= best:
                delta[j] = math.inf
                continue
        f = log_factor(family, u, state.cov, state.chol_inv, j, coef, 1.0)
        if category >= 0 and beta != 0.0:
            h = label_entropy_after(state, j, category, plus_one())
        value = base + p * (0.5 * f + beta * h)
        delta[j] = value
        if pruning and value < best:
            best = value


@numba.njit(nogil=True, cache=True)
def _update_family(
    state: ClusterState,
    c: int,
    family: int,
    u: FloatArray,
    old_size: float,
    sign: float,
    work: FloatArray,
) -> None:
    """Refresh the Cholesky factor and family cost of ``c`` after its moments changed by one point.

    ``u`` is the point minus the *old* mean. For ``full``, ``S' = rho (S + sign u u^T / W')``
    becomes a rank-one Cholesky update scaled by sqrt(rho); if a downdate loses positive
    definiteness the factor is recomputed from the (exactly updated) covariance.
    """
    new_size = state.size[c]
    if new_size <= 0.0:
        state.entropy[c] = 0.0
        return
    if old_size <= 0.0 or family != FULL:
        state.entropy[c] = family_entropy(family, state.cov[c], state.chol[c], state.chol_inv[c])
        return
    d = u.shape[0]
    scale = math.sqrt(1.0 / new_size)
    v = work[:d]
    for t in range(d):
        v[t] = scale * u[t]
    chol = state.chol[c]
    if cholesky_rank_one(chol, v, sign, work[d:]):
        root_rho = math.sqrt(old_size / new_size)
        for s in range(d):
            for t in range(s + 1):
                chol[s, t] *= root_rho
        invert_lower(chol, state.chol_inv[c])
        state.entropy[c] = d * HALF_LOG_2PIE + half_logdet(chol)
    else:
        state.entropy[c] = family_entropy(family, state.cov[c], chol, state.chol_inv[c])


@numba.njit(nogil=True, cache=True)
def insert_point(
    x: FloatArray,
    category: int,
    c: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    work: FloatArray,
) -> None:
    """Add one point to live cluster ``c``; ``work`` needs 3d values."""
    _change_point(x, category, c, state, family, n_total, beta, work, plus_one())


@numba.njit(nogil=True, cache=True)
def extract_point(
    x: FloatArray,
    category: int,
    c: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    work: FloatArray,
) -> None:
    """Remove one member point from cluster ``c``; ``work`` needs 3d values."""
    _change_point(x, category, c, state, family, n_total, beta, work, minus_one())


@numba.njit(nogil=True, cache=True)
def _change_point(
    x: FloatArray,
    category: int,
    c: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    work: FloatArray,
    sign: int,
) -> None:
    """One point in (``sign`` +1) or out (-1) of cluster ``c``: its moments, its family's
    factors, its label counts and its energy."""
    d = x.shape[0]
    u = work[:d]
    for t in range(d):
        u[t] = x[t] - state.mean[c, t]
    old = state.size[c]
    if sign > 0:
        state.size[c] = add_point(state.mean[c], state.cov[c], old, x, 1.0)
    else:
        state.size[c] = remove_point(state.mean[c], state.cov[c], old, x, 1.0)
    _update_family(state, c, family, u, old, float(sign), work[d:])
    update_labels(state, c, category, sign)
    refresh_energy(state, c, n_total, beta)


@numba.njit(nogil=True, cache=True)
def best_insertion(
    X: FloatArray,
    i: int,
    category: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    delta: FloatArray,
    u: FloatArray,
) -> int:
    """The live cluster whose energy grows least when X[i] joins it (first on ties).

    ``delta`` (k values) and ``u`` (d values) are scratch.
    """
    point_move_deltas(
        X, i, category, minus_one(), state, family, n_total, beta, math.inf,
        np.empty(0, np.int64), minus_one(), delta, u,
    )  # fmt: skip
    best = minus_one()  # an int64 from the start: callers compile one specialisation
    for j in range(delta.shape[0]):
        if state.alive[j] and (best < 0 or delta[j] < delta[best]):
            best = j
    return best


@numba.njit(nogil=True, cache=True)
def n_alive(state: ClusterState) -> int:
    count = 0
    for j in range(state.alive.shape[0]):
        if state.alive[j]:
            count += 1
    return count


@numba.njit(nogil=True, cache=True)
def kill_cluster(state: ClusterState, c: int) -> None:
    """Mark slot ``c`` dead with zero statistics (its members must be reassigned by the caller)."""
    state.alive[c] = False
    state.size[c] = 0.0
    state.entropy[c] = 0.0
    state.energy[c] = 0.0
    state.label_counts[c, :] = 0
    state.labeled[c] = 0
    state.label_xlogx[c] = 0.0


@numba.njit(nogil=True, cache=True)
def reinsert_orphans(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    work: FloatArray,
) -> None:
    """Insert every point of a dead cluster greedily, one at a time, in index order."""
    u = np.empty(X.shape[1])
    delta = np.empty(state.size.shape[0])
    for i in range(X.shape[0]):
        if not state.alive[assign[i]]:
            j = best_insertion(X, i, categories[i], state, family, n_total, beta, delta, u)
            insert_point(X[i], categories[i], j, state, family, n_total, beta, work)
            assign[i] = j


@numba.njit(nogil=True, cache=True)
def dissolve_cluster(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    state: ClusterState,
    c: int,
    family: int,
    n_total: float,
    beta: float,
    work: FloatArray,
) -> None:
    """Remove cluster ``c`` and reinsert its points (the caller keeps >= 1 live cluster)."""
    kill_cluster(state, c)
    reinsert_orphans(X, assign, categories, state, family, n_total, beta, work)


@numba.njit(nogil=True, cache=True)
def dissolve_invalid(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    min_size: float,
    work: FloatArray,
) -> int:
    """Remove all live clusters that are too small or singular; return how many were removed.

    Returns -1 (and changes nothing) if no cluster is valid: the caller then falls back to one
    cluster holding everything.
    """
    k = state.size.shape[0]
    n_valid = 0
    for c in range(k):
        if state.alive[c] and state.size[c] >= min_size and math.isfinite(state.entropy[c]):
            n_valid += 1
    if n_valid == 0:
        return -1
    removed = 0
    for c in range(k):
        if state.alive[c] and not (state.size[c] >= min_size and math.isfinite(state.entropy[c])):
            kill_cluster(state, c)
            removed += 1
    if removed > 0:
        reinsert_orphans(X, assign, categories, state, family, n_total, beta, work)
    return removed


class SweepClock(NamedTuple):
    """Bookkeeping that lets a sweep skip evaluations whose answer cannot have changed.

    A move's energy change depends only on the statistics of its source and target clusters.
    ``tick[0]`` counts changes; ``changed_at[c]`` is the tick of cluster c's last change and
    ``checked_at[i]`` the tick at which point i last found no improving move. A point whose
    cluster is unchanged since then only needs the clusters changed since then; if there are
    none it is skipped. This is exact, and makes the late sweeps (few moves) cheap.
    """

    tick: IntArray  # (1,)
    changed_at: IntArray  # (k,)
    checked_at: IntArray  # (n,)


def new_clock(n: int, k: int) -> SweepClock:
    """Every point unchecked: the first sweep evaluates everything."""
    return SweepClock(
        np.zeros(1, dtype=np.int64), np.zeros(k, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    )


@numba.njit(nogil=True, cache=True)
def mark_all_changed(clock: SweepClock) -> None:
    """Invalidate every earlier check (after cluster removal or re-estimation)."""
    clock.tick[0] += 1
    clock.changed_at[:] = clock.tick[0]


@numba.njit(nogil=True, cache=True)
def needs_check(a: int, since: int, state: ClusterState, clock: SweepClock) -> bool:
    """Whether a point in cluster ``a`` last checked at tick ``since`` could now move."""
    if clock.changed_at[a] > since:
        return True
    for j in range(clock.changed_at.shape[0]):
        if state.alive[j] and clock.changed_at[j] > since:
            return True
    return False


# ``changes_since``'s answer for a point that nothing changed around since its last check.
UNCHANGED = -2


@numba.njit(nogil=True, cache=True)
def changes_since(a: int, i: int, state: ClusterState, clock: SweepClock) -> int:
    """Since when point ``i`` (in cluster ``a``) must be checked again: -1 (every cluster:
    its own changed), the tick of its last check (only the clusters changed since), or
    UNCHANGED (nothing could move it)."""
    last = clock.checked_at[i]
    if not needs_check(a, last, state, clock):
        return UNCHANGED
    return -1 if clock.changed_at[a] > last else last


@numba.njit(nogil=True, cache=True)
def cheapest_move(delta: FloatArray, a: int, tol: float) -> int:
    """The cluster with the most negative ``delta`` if that is below ``-tol`` (the first on
    ties), else ``a``: where a point moves, or stays (spec decision 7.10)."""
    b = a
    best = -tol
    for j in range(delta.shape[0]):
        if delta[j] < best:
            best = delta[j]
            b = j
    return b


@numba.njit(nogil=True, cache=True)
def hartigan_sweep(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    min_size: float,
    tol: float,
    clock: SweepClock,
    delta: FloatArray,
    work: FloatArray,
) -> int:
    """One pass over the points in index order; returns the number of accepted moves.

    A point moves to the cluster with the most negative ``delta`` if that is below ``-tol``
    (spec decision 7.10). A source cluster that falls below ``min_size`` is dissolved at once.
    ``delta`` has k slots; ``work`` has 3d values.
    """
    moves = 0
    u = np.empty(X.shape[1])
    for i in range(X.shape[0]):
        a = assign[i]
        since = changes_since(a, i, state, clock)
        if since == UNCHANGED:
            continue
        z = categories[i]
        point_move_deltas(
            X, i, z, a, state, family, n_total, beta, -tol, clock.changed_at, since, delta, u
        )
        b = cheapest_move(delta, a, tol)
        if b == a:
            clock.checked_at[i] = clock.tick[0]
            continue
        extract_point(X[i], z, a, state, family, n_total, beta, work)
        insert_point(X[i], z, b, state, family, n_total, beta, work)
        assign[i] = b
        moves += 1
        clock.tick[0] += 1
        clock.changed_at[a] = clock.tick[0]
        clock.changed_at[b] = clock.tick[0]
        too_small = state.size[a] < min_size or not math.isfinite(state.entropy[a])
        if too_small and n_alive(state) > 1:
            dissolve_cluster(X, assign, categories, state, a, family, n_total, beta, work)
            mark_all_changed(clock)
    return moves


@numba.njit(nogil=True, cache=True)
def _group_energy_after(
    state: ClusterState,
    c: int,
    g_size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    sign: float,
    family: int,
    n_total: float,
    beta: float,
    mean: FloatArray,
    cov: FloatArray,
    chol: FloatArray,
    chol_inv: FloatArray,
) -> float:
    """E(c + G) (sign = +1) or E(c - G) (sign = -1) from copies of the moments of ``c``."""
    d = g_mean.shape[0]
    for s in range(d):
        mean[s] = state.mean[c, s]
        for t in range(d):
            cov[s, t] = state.cov[c, s, t]
    if sign > 0.0:
        size = add_group(mean, cov, state.size[c], g_mean, g_cov, g_size)
    else:
        size = remove_group(mean, cov, state.size[c], g_mean, g_cov, g_size)
    if size <= 0.0:
        return 0.0
    if size < nonsingular_points(family, d):
        return math.inf
    entropy = family_entropy(family, cov, chol, chol_inv)
    return cluster_energy(size, n_total, entropy, state.label_h[c], beta)


@numba.njit(nogil=True, cache=True)
def group_move_deltas(
    g_size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    a: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
    delta: FloatArray,
    scratch: FloatArray,
) -> None:
    """``delta[j]`` = E(a - G) + E(j + G) - E(a) - E(j) for an unlabeled group G, every slot j.

    G has weight ``g_size``, mean ``g_mean`` and MLE covariance ``g_cov``; it is a member of
    ``a`` (or of no cluster if ``a = -1``). Same conventions as ``point_move_deltas`` with
    exact entries: ``delta[a] = 0``; +inf for dead slots, singular clusters and singular results.
    G holds no labeled point, so label terms do not change. ``scratch`` is (3d + 1, d).
    """
    d = g_mean.shape[0]
    mean = scratch[0]
    cov = scratch[1 : d + 1]
    chol = scratch[d + 1 : 2 * d + 1]
    chol_inv = scratch[2 * d + 1 : 3 * d + 1]
    d_leave = 0.0
    if a >= 0:
        after = _group_energy_after(
            state, a, g_size, g_mean, g_cov, -1.0, family, n_total, beta, mean, cov, chol,
            chol_inv,
        )  # fmt: skip
        d_leave = after - state.energy[a]
    for j in range(delta.shape[0]):
        if j == a:
            delta[j] = 0.0
            continue
        if not state.alive[j] or not math.isfinite(d_leave) or not math.isfinite(state.energy[j]):
            delta[j] = math.inf
            continue
        after = _group_energy_after(
            state, j, g_size, g_mean, g_cov, 1.0, family, n_total, beta, mean, cov, chol,
            chol_inv,
        )  # fmt: skip
        delta[j] = d_leave + after - state.energy[j]


@numba.njit(nogil=True, cache=True)
def _refresh_family(state: ClusterState, c: int, family: int, n_total: float, beta: float) -> None:
    if state.size[c] <= 0.0:
        state.entropy[c] = 0.0
    else:
        state.entropy[c] = family_entropy(family, state.cov[c], state.chol[c], state.chol_inv[c])
    refresh_energy(state, c, n_total, beta)


@numba.njit(nogil=True, cache=True)
def insert_group(
    g_size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    c: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
) -> None:
    """Add an unlabeled group to live cluster ``c`` (exact union formula, fresh factor)."""
    state.size[c] = add_group(state.mean[c], state.cov[c], state.size[c], g_mean, g_cov, g_size)
    _refresh_family(state, c, family, n_total, beta)


@numba.njit(nogil=True, cache=True)
def extract_group(
    g_size: float,
    g_mean: FloatArray,
    g_cov: FloatArray,
    c: int,
    state: ClusterState,
    family: int,
    n_total: float,
    beta: float,
) -> None:
    """Remove an unlabeled member group from cluster ``c`` (exact difference formula)."""
    state.size[c] = remove_group(state.mean[c], state.cov[c], state.size[c], g_mean, g_cov, g_size)
    _refresh_family(state, c, family, n_total, beta)
