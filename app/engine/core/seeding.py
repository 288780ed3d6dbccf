"""Initial partitions for Hartigan CEC: k-means++ seeds with nearest-seed assignment, or random.

k-means++ as in the authors' code (spec cec-ib.md Sec. 3.2.1): the first seed uniformly at
random, then D^2 sampling on squared Euclidean distance, never a duplicate seed; by default
greedy, as scikit-learn seeds: each seed the best of 2 + ln k sampled candidates. Plain
k-means++ on 20 equal blobs (k = 20) put two seeds in one blob and none in another often
enough that CEC kept 17 to 19 of the 20 from one start; greedy seeding finds all 20. Every point
goes to its nearest seed. The random numbers come from the caller's numpy generator, so the
kernels are deterministic.

CEC-IB with labels starts from them instead (``label_seeding.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from app.engine.arrays import FloatArray, IntArray


@numba.njit(nogil=True, cache=True)
def _sq_dist(X: FloatArray, i: int, j: int) -> float:
    total = 0.0
    for t in range(X.shape[1]):
        diff = X[i, t] - X[j, t]
        total += diff * diff
    return total


@numba.njit(nogil=True, cache=True)
def kmeanspp_seeds(X: FloatArray, uniforms: FloatArray, seeds: IntArray) -> int:
    """Fill ``seeds`` with up to ``uniforms.shape[0]`` row indices; return how many were found.

    Greedy k-means++ (Arthur & Vassilvitskii 2007, Sec. 5; scikit-learn's default): every seed
    after the first is the best of ``uniforms.shape[1]`` D^2-sampled candidates, the one that
    leaves the smallest sum of squared distances to the nearest seed. One candidate per seed is
    the plain k-means++ of the authors' code. Row c of ``uniforms`` holds seed c's draws.
    Fewer seeds than asked come back only when every remaining point coincides with a seed.
    """
    n = X.shape[0]
    k, trials = uniforms.shape
    first = min(int(uniforms[0, 0] * n), n - 1)
    seeds[0] = first
    dist = np.empty(n)
    for i in range(n):
        dist[i] = _sq_dist(X, i, first)
    candidate = np.empty(n)
    best = np.empty(n)
    found = 1
    for c in range(1, k):
        total = 0.0
        for i in range(n):
            total += dist[i]
        if not (total > 0.0):
            break
        best_potential = np.inf
        best_seed = -1
        for t in range(trials):
            chosen = _d2_sample(dist, uniforms[c, t] * total)
            potential = 0.0
            for i in range(n):
                dist_i = min(dist[i], _sq_dist(X, i, chosen))
                candidate[i] = dist_i
                potential += dist_i
            if potential < best_potential:
                best_potential = potential
                best_seed = chosen
                # Swapped, not copied: an array-to-slice copy compiles numba's shape-mismatch
                # error path (string formatting), 2 s of a cold start.
                best, candidate = candidate, best
        seeds[c] = best_seed
        dist, best = best, dist
        found += 1
    return found


@numba.njit(nogil=True, cache=True)
def _d2_sample(dist: FloatArray, target: float) -> int:
    """The first point whose running sum of ``dist`` passes ``target`` (points at distance 0,
    the seeds themselves, are never chosen)."""
    chosen = -1
    running = 0.0
    for i in range(dist.shape[0]):
        if dist[i] > 0.0:
            chosen = i
            running += dist[i]
            if running > target:
                break
    return chosen


def greedy_trials(n_clusters: int) -> int:
    """Candidates per seed of greedy k-means++: 2 + ln k, as scikit-learn draws."""
    return 2 + int(np.log(max(n_clusters, 1)))


@numba.njit(nogil=True, cache=True)
def _sq_dist_to(X: FloatArray, i: int, centre: FloatArray) -> float:
    total = 0.0
    for t in range(X.shape[1]):
        diff = X[i, t] - centre[t]
        total += diff * diff
    return total


@numba.njit(nogil=True, cache=True)
def assign_nearest_centre(X: FloatArray, centres: FloatArray, assign: IntArray) -> None:
    """``assign[i]`` = index of the row of ``centres`` nearest to row i (first on ties)."""
    for i in range(X.shape[0]):
        best = 0
        best_dist = _sq_dist_to(X, i, centres[0])
        for c in range(1, centres.shape[0]):
            dist_c = _sq_dist_to(X, i, centres[c])
            if dist_c < best_dist:
                best = c
                best_dist = dist_c
        assign[i] = best


def assign_nearest_seed(X: FloatArray, seeds: IntArray, assign: IntArray) -> None:
    """``assign[i]`` = position in ``seeds`` of the seed nearest to row i (first on ties)."""
    assign_nearest_centre(X, np.ascontiguousarray(X[seeds]), assign)


def initial_partition(
    X: FloatArray,
    n_clusters: int,
    init: str,
    rng: np.random.RandomState,
    local_trials: int | None = None,
) -> IntArray:
    """Cluster index in 0..n_clusters-1 of every row (some slots may stay empty).
    ``local_trials``: candidates per k-means++ seed; None: ``greedy_trials`` (1: plain)."""
    n = X.shape[0]
    if init == "random":
        return np.asarray(rng.randint(n_clusters, size=n), dtype=np.int64)
    trials = greedy_trials(n_clusters) if local_trials is None else local_trials
    seeds = np.zeros(n_clusters, dtype=np.int64)
    found = kmeanspp_seeds(X, rng.uniform(size=(n_clusters, trials)), seeds)
    assign = np.empty(n, dtype=np.int64)
    assign_nearest_seed(X, seeds[:found], assign)
    return assign
