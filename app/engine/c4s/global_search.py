"""C4s step 3: Hartigan CEC over items with only valid moves (spec c4s.md Sec. 3.5, 3.7).

Built on the core: one-point items use ``point_move_deltas`` / ``extract_point`` /
``insert_point`` exactly as the CEC sweep does (pruned deltas for items that need no validity
check, exact ones otherwise), groups use ``group_move_deltas`` / ``extract_group`` /
``insert_group``. A candidate move is taken only if ``move_is_valid`` accepts it, so the partition
is valid after every move, including the reinsertions of a cluster removal. If some item of a
removed cluster has no valid destination, the whole removal is rolled back (``copy_state``) and
the cluster is kept for the rest of the sweep (spec Sec. 3.5 decision).

Without constraints every item is a point in index order and the run is the core CEC run step
for step (same start, deltas, tolerance, removals), which the tests check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from scipy.optimize import linear_sum_assignment

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.c4s.items import Items
from app.engine.c4s.validity import CannotLinkGraph, move_is_valid
from app.engine.core.cec_state import (
    ClusterState,
    copy_state,
    new_state,
    recompute_state,
    total_energy,
)
from app.engine.core.hartigan import (
    UNCHANGED,
    SweepClock,
    changes_since,
    cheapest_move,
    extract_group,
    extract_point,
    group_move_deltas,
    insert_group,
    insert_point,
    kill_cluster,
    mark_all_changed,
    n_alive,
    new_clock,
    point_move_deltas,
)
from app.engine.core.int_args import minus_one
from app.engine.core.seeding import greedy_trials, kmeanspp_seeds
from app.engine.progress import Progress, asks_to_stop

# random orders the valid greedy seeding tries before the colouring start (a failed order costs
# one pass over the watched items)
GREEDY_ORDERS = 10


class Scratch(NamedTuple):
    """Preallocated work arrays of the global kernels."""

    delta: FloatArray  # (k,)
    u: FloatArray  # (d,)
    group: FloatArray  # (3d + 1, d) for group_move_deltas
    work: FloatArray  # (3d,) for insert_point / extract_point
    no_clock: IntArray  # (0,)
    orphans: IntArray  # (m,) items of removed clusters
    homes: IntArray  # (m,) their clusters, to roll back
    kill: BoolArray  # (k,)
    blocked: BoolArray  # (k,) clusters whose removal failed in this sweep
    snapshot: ClusterState


def new_scratch(m: int, k: int, d: int) -> Scratch:
    return Scratch(
        delta=np.empty(k),
        u=np.empty(d),
        group=np.empty((3 * d + 1, d)),
        work=np.empty(3 * d),
        no_clock=np.empty(0, dtype=np.int64),
        orphans=np.empty(m, dtype=np.int64),
        homes=np.empty(m, dtype=np.int64),
        kill=np.zeros(k, dtype=np.bool_),
        blocked=np.zeros(k, dtype=np.bool_),
        snapshot=new_state(k, d, 0),
    )


@numba.njit(nogil=True, cache=True)
def item_deltas(
    X: FloatArray, items: Items, t: int, a: int, state: ClusterState, family: int,
    n_total: float, prune_above: float, sc: Scratch, changed_at: IntArray, since: int,
) -> None:  # fmt: skip
    """``sc.delta[j]``: energy change of moving item ``t`` from ``a`` (-1: nowhere) to j.

    ``changed_at`` / ``since`` as in ``point_move_deltas`` (one-point items only; a group is
    always evaluated against every cluster).
    """
    i = items.row[t]
    if i >= 0:
        point_move_deltas(
            X, i, minus_one(), a, state, family, n_total, 0.0, prune_above, changed_at, since,
            sc.delta, sc.u,
        )  # fmt: skip
    else:
        g = items.group[t]
        group_move_deltas(
            items.g_size[g], items.g_mean[g], items.g_cov[g], a, state, family, n_total, 0.0,
            sc.delta, sc.group,
        )  # fmt: skip


@numba.njit(nogil=True, cache=True)
def insert_item(
    X: FloatArray, items: Items, t: int, c: int, state: ClusterState, family: int,
    n_total: float, sc: Scratch,
) -> None:  # fmt: skip
    i = items.row[t]
    if i >= 0:
        insert_point(X[i], minus_one(), c, state, family, n_total, 0.0, sc.work)
    else:
        g = items.group[t]
        insert_group(
            items.g_size[g], items.g_mean[g], items.g_cov[g], c, state, family, n_total, 0.0
        )


@numba.njit(nogil=True, cache=True)
def extract_item(
    X: FloatArray, items: Items, t: int, c: int, state: ClusterState, family: int,
    n_total: float, sc: Scratch,
) -> None:  # fmt: skip
    i = items.row[t]
    if i >= 0:
        extract_point(X[i], minus_one(), c, state, family, n_total, 0.0, sc.work)
    else:
        g = items.group[t]
        extract_group(
            items.g_size[g], items.g_mean[g], items.g_cov[g], c, state, family, n_total, 0.0
        )


@numba.njit(nogil=True, cache=True)
def best_valid_move(
    t: int, a: int, tol: float, item_cluster: IntArray, graph: CannotLinkGraph, delta: FloatArray
) -> int:
    """The valid target with the most negative delta below -tol (first on ties), else ``a``.

    Validity is checked only for the current best candidate; a rejected one is set to +inf.
    """
    while True:
        b = cheapest_move(delta, a, tol)
        if b == a or move_is_valid(t, b, item_cluster, graph):
            return b
        delta[b] = math.inf


@numba.njit(nogil=True, cache=True)
def dissolve_clusters(
    X: FloatArray, items: Items, graph: CannotLinkGraph, item_cluster: IntArray,
    state: ClusterState, family: int, n_total: float, sc: Scratch,
) -> bool:  # fmt: skip
    """Kill the clusters in ``sc.kill`` and insert their items one at a time, in item order,
    into the valid live cluster whose energy grows least (first on ties). Returns False, with
    everything rolled back, if some item has no valid destination."""
    copy_state(state, sc.snapshot)
    m = item_cluster.shape[0]
    count = 0
    for t in range(m):
        c = item_cluster[t]
        if c >= 0 and sc.kill[c]:
            sc.orphans[count] = t
            sc.homes[count] = c
            count += 1
            item_cluster[t] = -1
    for c in range(sc.kill.shape[0]):
        if sc.kill[c]:
            kill_cluster(state, c)
    for s in range(count):
        t = sc.orphans[s]
        item_deltas(
            X,
            items,
            t,
            minus_one(),
            state,
            family,
            n_total,
            math.inf,
            sc,
            sc.no_clock,
            minus_one(),
        )
        b = minus_one()  # not the literal -1: insert_item compiled once, not twice
        for j in range(sc.delta.shape[0]):
            if (
                state.alive[j]
                and (b < 0 or sc.delta[j] < sc.delta[b])
                and move_is_valid(t, j, item_cluster, graph)
            ):
                b = j
        if b < 0:
            copy_state(sc.snapshot, state)
            for r in range(count):
                item_cluster[sc.orphans[r]] = sc.homes[r]
            return False
        insert_item(X, items, t, b, state, family, n_total, sc)
        item_cluster[t] = b
    return True


@numba.njit(nogil=True, cache=True)
def _too_small(state: ClusterState, c: int, min_size: float) -> bool:
    return state.size[c] < min_size or not math.isfinite(state.entropy[c])


@numba.njit(nogil=True, cache=True)
def remove_invalid_clusters(
    X: FloatArray, items: Items, graph: CannotLinkGraph, item_cluster: IntArray,
    state: ClusterState, family: int, n_total: float, min_size: float, sc: Scratch,
) -> int:  # fmt: skip
    """Remove every live cluster that is too small or singular (at least one cluster stays:
    if none is valid, the largest); returns how many were removed."""
    k = state.size.shape[0]
    largest = -1
    n_valid = 0
    for c in range(k):
        sc.kill[c] = False
        if state.alive[c]:
            if not _too_small(state, c, min_size):
                n_valid += 1
            if largest < 0 or state.size[c] > state.size[largest]:
                largest = c
    count = 0
    for c in range(k):
        removable = state.alive[c] and not sc.blocked[c] and (n_valid > 0 or c != largest)
        if removable and _too_small(state, c, min_size):
            sc.kill[c] = True
            count += 1
    if count == 0:
        return 0
    if dissolve_clusters(X, items, graph, item_cluster, state, family, n_total, sc):
        return count
    # the joint removal failed: try the clusters one at a time, keep those that cannot go
    candidates = np.nonzero(sc.kill)[0]
    removed = 0
    for s in range(candidates.shape[0]):
        sc.kill[:] = False
        sc.kill[candidates[s]] = True
        if dissolve_clusters(X, items, graph, item_cluster, state, family, n_total, sc):
            removed += 1
        else:
            sc.blocked[candidates[s]] = True
    sc.kill[:] = False
    return removed


@numba.njit(nogil=True, cache=True)
def global_sweep(
    X: FloatArray, items: Items, graph: CannotLinkGraph, item_cluster: IntArray,
    state: ClusterState, family: int, n_total: float, min_size: float, tol: float, sc: Scratch,
    clock: SweepClock,
) -> int:  # fmt: skip
    """One pass over the items in order; returns the number of accepted moves.

    Items without cannot-links skip, exactly, the evaluations whose answer cannot have changed
    since they last found no improving move (the core's ``SweepClock``). Items with cannot-links
    are always evaluated in full: whether a move is valid depends on where other items are.
    """
    moves = 0
    k = state.size.shape[0]
    for t in range(item_cluster.shape[0]):
        a = item_cluster[t]
        watched = graph.watched[t]
        since = -1
        if not watched:
            since = changes_since(a, t, state, clock)
            if since == UNCHANGED:
                continue
        prune = math.inf if watched else -tol
        item_deltas(X, items, t, a, state, family, n_total, prune, sc, clock.changed_at, since)
        b = best_valid_move(t, a, tol, item_cluster, graph, sc.delta)
        if b == a:
            clock.checked_at[t] = clock.tick[0]
            continue
        extract_item(X, items, t, a, state, family, n_total, sc)
        insert_item(X, items, t, b, state, family, n_total, sc)
        item_cluster[t] = b
        moves += 1
        clock.tick[0] += 1
        clock.changed_at[a] = clock.tick[0]
        clock.changed_at[b] = clock.tick[0]
        if _too_small(state, a, min_size) and not sc.blocked[a] and n_alive(state) > 1:
            for j in range(k):
                sc.kill[j] = j == a
            if dissolve_clusters(X, items, graph, item_cluster, state, family, n_total, sc):
                mark_all_changed(clock)
            else:  # rolled back exactly: nothing changed
                sc.blocked[a] = True
            sc.kill[a] = False
    return moves


@numba.njit(nogil=True, cache=True)
def nearest_center(M: FloatArray, centers: FloatArray, out: IntArray) -> None:
    """``out[t]`` = index of the center nearest to row t of M (first on ties)."""
    for t in range(M.shape[0]):
        best = 0
        best_dist = math.inf
        for c in range(centers.shape[0]):
            dist = 0.0
            for s in range(M.shape[1]):
                diff = M[t, s] - centers[c, s]
                dist += diff * diff
            if dist < best_dist:
                best = c
                best_dist = dist
        out[t] = best


def initial_items_partition(
    X: FloatArray,
    items: Items,
    graph: CannotLinkGraph,
    n_clusters: int,
    colour: IntArray,
    rng: np.random.RandomState,
) -> IntArray:
    """Valid greedy seeding (spec Sec. 3.7): k-means++ seeds on the points; the watched items,
    in random order, go to the nearest cluster that keeps the partition valid; the others to
    their nearest seed. When the greedy order paints itself into a corner, the spec's
    alternative start is used instead: whole chunklets placed by the colouring ``colour`` of
    the cannot-link graph (``coloured_partition``), which is valid whenever the fit is feasible."""
    seeds = np.zeros(n_clusters, dtype=np.int64)
    found = kmeanspp_seeds(X, rng.uniform(size=(n_clusters, greedy_trials(n_clusters))), seeds)
    centers = X[seeds[:found]]
    means = X[np.maximum(items.row, 0)].copy()
    grouped = items.group >= 0
    means[grouped] = items.g_mean[items.group[grouped]]
    item_cluster = np.empty(means.shape[0], dtype=np.int64)
    nearest_center(means, centers, item_cluster)
    watched = graph.watched_items
    for _ in range(GREEDY_ORDERS):
        if _greedy_placement(means, centers, watched, graph, item_cluster, rng):
            return item_cluster
    return coloured_partition(means, items, graph, centers, colour, item_cluster, n_clusters)


def _greedy_placement(
    means: FloatArray,
    centers: FloatArray,
    watched: IntArray,
    graph: CannotLinkGraph,
    item_cluster: IntArray,
    rng: np.random.RandomState,
) -> bool:
    """The watched items in a random order, each to its nearest valid seed; False when one has
    none (``item_cluster`` is then partial)."""
    item_cluster[watched] = -1
    for t in rng.permutation(watched):
        dist = ((centers - means[t]) ** 2).sum(axis=1)
        for c in np.argsort(dist, kind="stable"):
            if move_is_valid(int(t), int(c), item_cluster, graph):
                item_cluster[t] = c
                break
        else:
            return False
    return True


def coloured_partition(
    means: FloatArray,
    items: Items,
    graph: CannotLinkGraph,
    centers: FloatArray,
    colour: IntArray,
    item_cluster: IntArray,
    n_clusters: int,
) -> IntArray:
    """Every watched chunklet whole in one cluster, so nothing merges and the partition is valid
    iff the colouring is proper: cannot-linked chunklets by colour, the colours matched to the
    seeds by least total squared distance of their weighted means; the other watched chunklets
    (split, no cannot-link) at the seed nearest their mean. Unwatched items keep their seed."""
    out = item_cluster.copy()
    watched = graph.watched_items
    weight = np.where(items.row >= 0, 1.0, 0.0)
    grouped = items.group >= 0
    weight[grouped] = items.g_size[items.group[grouped]]
    chunk = graph.item_chunk[watched]
    n_chunk = graph.split.shape[0]
    mass = np.bincount(chunk, weights=weight[watched], minlength=n_chunk)
    sums = np.stack(
        [np.bincount(chunk, weights=weight[watched] * means[watched, s], minlength=n_chunk)
         for s in range(means.shape[1])], axis=1,
    )  # fmt: skip
    chunk_mean = sums / np.maximum(mass, 1e-300)[:, None]
    negative = graph.has_neg[chunk]
    cluster_of_colour = np.arange(n_clusters)  # fewer distinct points than clusters: as is
    if centers.shape[0] == n_clusters:
        cost = np.zeros((n_clusters, n_clusters))  # cost[colour, cluster]
        for c in np.unique(chunk[negative]):
            cost[colour[c]] += mass[c] * ((centers - chunk_mean[c]) ** 2).sum(axis=1)
        cluster_of_colour = linear_sum_assignment(cost)[1]
    out[watched[negative]] = cluster_of_colour[colour[chunk[negative]]]
    free = np.empty(n_chunk, dtype=np.int64)
    nearest_center(chunk_mean, centers, free)
    out[watched[~negative]] = free[chunk[~negative]]
    return out


@dataclass
class GlobalRun:
    item_cluster: IntArray
    energy: float
    n_iter: int
    converged: bool
    history: list[float]


def run_global(
    X: FloatArray,
    items: Items,
    graph: CannotLinkGraph,
    item_of_point: IntArray,
    *,
    n_clusters: int,
    colour: IntArray,
    family: int,
    min_size: float,
    max_iter: int,
    tol: float,
    rng: np.random.RandomState,
    progress: Progress | None,
    first_iteration: int,
) -> tuple[GlobalRun, bool]:
    """One restart of the global stage; returns the run and whether ``progress`` asked to stop."""
    n, d = X.shape
    m = item_of_point.max() + 1
    categories = np.full(n, -1, dtype=np.int64)
    item_cluster = initial_items_partition(X, items, graph, n_clusters, colour, rng)
    state = new_state(n_clusters, d, 0)
    state.alive[:] = np.bincount(item_cluster, minlength=n_clusters) > 0
    recompute_state(X, item_cluster[item_of_point], categories, state, family, float(n), 0.0)
    sc = new_scratch(int(m), n_clusters, d)
    remove_invalid_clusters(X, items, graph, item_cluster, state, family, float(n), min_size, sc)
    clock = new_clock(int(m), n_clusters)
    history: list[float] = []
    converged = stop = False
    sweeps = 0
    for sweeps in range(1, max_iter + 1):
        sc.blocked[:] = False
        moves = global_sweep(
            X, items, graph, item_cluster, state, family, float(n), min_size, tol, sc, clock
        )
        recompute_state(X, item_cluster[item_of_point], categories, state, family, float(n), 0.0)
        removed = remove_invalid_clusters(
            X, items, graph, item_cluster, state, family, float(n), min_size, sc
        )
        if removed > 0:
            mark_all_changed(clock)
        energy = total_energy(state)
        history.append(energy)
        stop = asks_to_stop(progress, first_iteration + sweeps, energy)
        if moves == 0 and removed == 0:
            converged = True
            break
        if stop:
            break
    return GlobalRun(item_cluster, total_energy(state), sweeps, converged, history), stop
