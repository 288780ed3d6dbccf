"""The CEC / CEC-IB fit: restarts, sweeps, convergence, cancellation (spec cec-ib.md Sec. 3.3).

Pure functions over arrays; the estimators in ``cec.py`` and ``cec_ib.py`` validate their inputs
and call ``fit_cec``. Each sweep is one numba call; between sweeps the statistics are recomputed
from scratch (drift control), clusters that became singular are removed, and ``progress`` is
called, so cancelling always leaves a consistent partition.

Polishing (``polish``, the estimators' default): Hartigan moves one point at a time, and a
converged start often sits where only a move of a whole cluster lowers the energy. From each
converged start (under the energy rule) the fit tries, in turn, splitting a cluster in two
along its principal axis (of the whitened data) into a slot CEC emptied, dissolving a cluster,
and dissolving one while splitting another into its slot; each is run on by Hartigan, and the
first that ends lower is kept and its neighbours tried next, within ``POLISH_POINT_RUNS``. On
the paper's protocol the authors' 10 plain starts end lower than the unpolished engine in half
of the configurations; polished, in none (docs/cec-ib.md, "Energy parity").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.cec_state import ClusterState, new_state, recompute_state, total_energy
from app.engine.core.families import family_covariances, min_cluster_points
from app.engine.core.fresh_starts import continued_is_enough
from app.engine.core.hartigan import (
    dissolve_cluster,
    dissolve_invalid,
    hartigan_sweep,
    mark_all_changed,
    new_clock,
)
from app.engine.core.label_seeding import (
    label_seeded_partition,
    labeled_agreement,
    resampled_categories,
)
from app.engine.core.seeding import initial_partition
from app.engine.progress import Progress, asks_to_stop

# The iteration a caller passes to `progress` to ask only whether to go on (a falsy answer
# stops), from work that has no sweep to show: CEC-IB's labeled-weight search.
ASK_ONLY = -1

# Smallest energy decrease that counts as an improving move (spec decision 7.10). Energies are
# sums of terms of order 1; their rounding error is about 1e-15.
MOVE_TOL = 1e-12
# Items x polishing runs one fit may spend (``polish``): about 660 runs on iris, 560 on wine
# (paper protocol: 24 of 24 at or below the authors' energy; 30,000 gave 22), but at least
# POLISH_MIN_RUNS on large data, where the first candidate (the largest cluster split into a
# slot CEC emptied) is the one that pays: make_blobs(200k, 20 centres) kept 19 clusters (ARI
# 0.95) from the greedy start alone and all 20 (ARI 1.0) with 2 polishing runs (time / GMM's
# 0.14 -> 0.19); 10 runs cost 2.1x GMM's time (each from a changed partition sweeps all).
POLISH_POINT_RUNS = 100_000
POLISH_MIN_RUNS = 2


@dataclass
class CECResult:
    """A fitted partition with clusters numbered 0..k'-1 by first occurrence."""

    labels: IntArray
    energy: float
    weights: FloatArray
    means: FloatArray
    covariances: FloatArray
    n_iter: int
    converged: bool
    cancelled: bool
    energy_history: list[float] = field(default_factory=list)
    warm_started: bool = False


class SingularDataError(ValueError):
    """Even a single cluster holding all points has a singular covariance."""


@dataclass
class _Run:
    warm: bool  # started from the previous fit's partition
    assign: IntArray
    state: ClusterState
    energy: float
    n_iter: int
    converged: bool
    history: list[float]


def min_cluster_size(n: int, d: int, family: int, min_cluster_fraction: float) -> float:
    """Clusters smaller than this are removed: max(eps * n, the family's minimum)."""
    return max(min_cluster_fraction * n, float(min_cluster_points(family, d)))


def seeds_from_labels(init: str, beta: float, n_categories: int, n_clusters: int) -> bool:
    """Whether ``init='labels'`` starts from the labels: only when they count (beta > 0) and
    every category can have a cluster of its own (else it is k-means++)."""
    return init == "labels" and beta > 0.0 and 1 <= n_categories <= n_clusters


@dataclass(frozen=True)
class _Problem:
    """What every start of one fit shares: the data, its labels and the fit's settings."""

    X: FloatArray
    categories: IntArray
    n_categories: int
    n_clusters: int
    family: int
    beta: float
    min_size: float
    max_iter: int
    init: str
    rng: np.random.RandomState
    progress: Progress | None
    local_trials: int | None


def _start(
    p: _Problem, work: FloatArray, restart: int, warm: IntArray | None = None
) -> tuple[IntArray, ClusterState]:
    """Initial partition with invalid clusters already removed: ``warm`` when given (a
    previous fit's partition); with ``init='labels'``, from the categories' means
    (``label_seeding``); else k-means++ (``local_trials`` candidates per seed) or random."""
    X, categories, n_categories, n_clusters = p.X, p.categories, p.n_categories, p.n_clusters
    n, d = X.shape
    if warm is not None:
        assign = warm.astype(np.int64, copy=True)
    elif seeds_from_labels(p.init, p.beta, n_categories, n_clusters):
        # One cluster per category: the labeled means, then the same Lloyd-refined, then
        # refined means of resampled labeled items. With extra clusters every start draws its
        # own extra centres (refinement did not help there, docs/cec-ib.md).
        one_each = n_clusters == n_categories
        seeds = (
            resampled_categories(categories, n_categories, p.rng)
            if one_each and restart >= 2
            else categories
        )
        assign = label_seeded_partition(
            X, seeds, n_categories, n_clusters, p.rng, refine=one_each and restart >= 1
        )
    else:
        how = "random" if p.init == "random" else "k-means++"
        assign = initial_partition(X, n_clusters, how, p.rng, p.local_trials)
    state = new_state(n_clusters, d, n_categories)
    state.alive[:] = np.bincount(assign, minlength=n_clusters) > 0
    family, beta = p.family, p.beta
    recompute_state(X, assign, categories, state, family, float(n), beta)
    if dissolve_invalid(X, assign, categories, state, family, float(n), beta, p.min_size, work) < 0:
        assign[:] = 0
        state.alive[:] = False
        state.alive[0] = True
        recompute_state(X, assign, categories, state, family, float(n), beta)
        if not math.isfinite(state.entropy[0]):
            raise SingularDataError(
                "the covariance of X is singular, so no cluster has a finite cost; remove "
                "constant or linearly dependent features (e.g. with PCA) or use "
                "covariance='diagonal' or 'spherical'"
            )
    return assign, state


def _run(
    p: _Problem,
    *,
    first_iteration: int,
    restart: int,
    seen: set[bytes] | None = None,
    warm: IntArray | None = None,
) -> tuple[_Run | None, bool]:
    """One restart (from ``warm`` when given); returns the run and whether ``progress`` asked
    to stop. With ``seen`` (the start partitions run so far), a start already run is skipped
    (None): sweeps are deterministic, so it would end where that one did."""
    X, categories, family, beta = p.X, p.categories, p.family, p.beta
    n, d = X.shape
    work = np.empty(3 * d)
    delta = np.empty(p.n_clusters)
    assign, state = _start(p, work, restart, warm)
    if seen is not None:
        key = hashlib.blake2b(assign.tobytes(), digest_size=16).digest()  # 16 bytes, not 8n
        if key in seen:
            return None, False
        seen.add(key)
    clock = new_clock(n, p.n_clusters)
    history: list[float] = []
    converged = False
    stop = False
    sweeps = 0
    for sweeps in range(1, p.max_iter + 1):
        moves = hartigan_sweep(
            X, assign, categories, state, family, float(n), beta, p.min_size, MOVE_TOL, clock,
            delta, work,
        )  # fmt: skip
        recompute_state(X, assign, categories, state, family, float(n), beta)
        removed = dissolve_invalid(
            X, assign, categories, state, family, float(n), beta, p.min_size, work
        )
        if removed > 0:
            mark_all_changed(clock)
        energy = total_energy(state)
        history.append(energy)
        stop = asks_to_stop(p.progress, first_iteration + sweeps, energy)
        if moves == 0 and removed <= 0:
            converged = True
            break
        if stop:
            break
    run = _Run(warm is not None, assign, state, total_energy(state), sweeps, converged, history)
    return run, stop


def agreement_share(
    assign: IntArray, categories: IntArray, n_clusters: int, n_categories: int
) -> float:
    """The share of labeled points whose cluster's most frequent category is their own (1
    without labels): how well a partition agrees with the labels."""
    labeled = int(np.count_nonzero(categories >= 0))
    if labeled == 0:
        return 1.0
    return labeled_agreement(assign, categories, n_clusters, n_categories) / labeled


def _result(run: _Run, family: int, cancelled: bool) -> CECResult:
    """Renumber the live clusters 0..k'-1 by first occurrence and extract the parameters."""
    _, first = np.unique(run.assign, return_index=True)
    order = run.assign[np.sort(first)]
    relabel = np.full(run.state.size.shape[0], -1, dtype=np.int64)
    relabel[order] = np.arange(order.shape[0])
    n = run.assign.shape[0]
    return CECResult(
        labels=relabel[run.assign],
        energy=run.energy,
        weights=run.state.size[order] / n,
        means=run.state.mean[order].copy(),
        covariances=family_covariances(family, run.state.cov[order]),
        n_iter=run.n_iter,
        converged=run.converged,
        cancelled=cancelled,
        energy_history=run.history,
        warm_started=run.warm,
    )


def _continued(run: _Run, step: _Run) -> _Run:
    """``step`` (a polishing run from ``run``'s partition) as the continuation of ``run``: its
    sweeps and energies follow ``run``'s, and it is warm if ``run`` was."""
    step.warm = run.warm
    step.n_iter += run.n_iter
    step.history = run.history + step.history
    return step


def without_cluster(
    X: FloatArray,
    assign: IntArray,
    categories: IntArray,
    n_categories: int,
    n_clusters: int,
    cluster: int,
    family: int,
    beta: float,
) -> IntArray:
    """``assign`` with ``cluster`` dissolved: its points reinserted one by one where they
    cost least (as CEC removes a cluster that became too small)."""
    n, d = X.shape
    out = assign.copy()
    state = new_state(n_clusters, d, n_categories)
    state.alive[:] = np.bincount(out, minlength=n_clusters) > 0
    recompute_state(X, out, categories, state, family, float(n), beta)
    dissolve_cluster(X, out, categories, state, cluster, family, float(n), beta, np.empty(3 * d))
    return out


def whitening_map(X: FloatArray) -> FloatArray:
    """W (d x d) such that (X - mean) W has identity covariance (W = L^{-T}, S = L L^T); for a
    singular S, the features scaled to unit variance (constant ones left as they are)."""
    centred_cov = np.cov(X, rowvar=False, bias=True).reshape(X.shape[1], X.shape[1])
    try:
        return np.asarray(np.linalg.inv(np.linalg.cholesky(centred_cov)).T)
    except np.linalg.LinAlgError:
        scale = np.sqrt(np.diag(centred_cov))
        scale[scale == 0.0] = 1.0
        return np.diag(1.0 / scale)


def split_cluster(
    X: FloatArray, whitening: FloatArray, assign: IntArray, cluster: int, into: int
) -> IntArray:
    """``assign`` with the members of ``cluster`` on the positive side of its principal axis
    (through its mean) moved to the empty slot ``into``. The axis is taken after
    ``whitening`` (``whitening_map``), so it does not depend on the features' units (CEC's
    energy does not); only the members are copied."""
    members = np.flatnonzero(assign == cluster)
    out = assign.copy()
    if members.shape[0] < 2:
        return out
    part = X[members]
    centred = (part - part.mean(axis=0)) @ whitening
    axis = np.linalg.svd(centred, full_matrices=False)[2][0]
    out[members[centred @ axis > 0.0]] = into
    return out


def fit_cec(
    X: FloatArray,
    categories: IntArray,
    n_categories: int,
    *,
    n_clusters: int,
    family: int,
    beta: float,
    min_cluster_fraction: float,
    n_init: int,
    max_iter: int,
    init: str,
    rng: np.random.RandomState,
    progress: Progress | None = None,
    warm: IntArray | None = None,
    local_trials: int | None = None,
    polish: bool | str = True,
    warm_enough: float | None = None,
) -> CECResult:
    """Best of ``n_init`` Hartigan runs of CEC-IB (beta = 0 or no labels: plain CEC): the
    lowest energy (the paper's rule), except with ``init='labels'`` and one cluster per label
    category, where the run whose clusters agree with more labeled points wins and energy
    breaks ties (``labeled_agreement``). ``local_trials``: candidates per k-means++ seed
    (None: greedy, 2 + ln k; 1: the authors' plain k-means++). ``polish``: True (or "full")
    tries splits and removals after each converged start, "remove" removals only, False
    nothing (module docstring).

    ``categories[i]``: point i's category code 0..n_categories-1, or -1 if unlabeled. ``warm``
    (cluster ids in 0..n_clusters-1, one per point): a previous fit's partition, run
    first as one more start under the same rule (it wins exact ties). Often the labels added
    since do not move its optimum, and fresh starts then land in others of about the same
    energy, which redraws the clusters; continued, the fit stays (docs/cec-ib.md, "Warm
    starts"). ``warm_enough``: when the continued start agrees with at least this share of the
    labeled points (``agreement_share``), the fresh starts are not drawn (``fresh_starts.py``).
    """
    n, d = X.shape
    problem = _Problem(
        X, categories, n_categories, n_clusters, family, beta,
        min_cluster_size(n, d, family, min_cluster_fraction), max_iter, init, rng, progress,
        local_trials,
    )  # fmt: skip
    search = _Search(problem, polish)
    starts: list[IntArray | None] = [None] * n_init if warm is None else [warm, *[None] * n_init]
    best: _Run | None = None
    for restart, start in enumerate(starts):
        run = search.descend(restart - (warm is not None), start)
        # Polishing continues a converged fit under the energy rule; under the labels' rule
        # the starts are the labels' and a lower energy often agrees less (digits).
        if run is not None and run.converged and not search.stop and not search.by_labels:
            run = search.polished(run)
        if run is not None and (best is None or search.rank(run) < search.rank(best)):
            best = run
        if search.stop:
            break
        if run is not None and run.warm:
            share = agreement_share(run.assign, categories, n_clusters, n_categories)
            if continued_is_enough(share, warm_enough):
                break
    assert best is not None
    return _result(best, family, search.stop)


class _Search:
    """One fit's descent over starts and polishing moves. It keeps what the starts share: the
    sweeps run so far (``progress`` counts on across starts), whether ``progress`` asked to
    stop, the start partitions already run and the polishing runs left."""

    def __init__(self, problem: _Problem, polish: bool | str) -> None:
        p = self.problem = problem
        n, d = p.X.shape
        self.by_labels = seeds_from_labels(p.init, p.beta, p.n_categories, p.n_clusters) and (
            p.n_clusters == p.n_categories
        )
        # Resampled labeled starts often refine to a start already run (many labeled items:
        # images)
        self.seen: set[bytes] | None = set() if self.by_labels else None
        self.iteration = 0
        self.stop = False
        self.budget = max(POLISH_MIN_RUNS, POLISH_POINT_RUNS // max(n, 1)) if polish else 0
        self.splits = polish is True or polish == "full"
        self.whitening = whitening_map(p.X) if self.budget > 0 and self.splits else np.eye(d)

    def rank(self, run: _Run) -> tuple[int, float, int]:
        p = self.problem
        agreement = (
            labeled_agreement(run.assign, p.categories, p.n_clusters, p.n_categories)
            if self.by_labels
            else 0
        )
        return (-agreement, run.energy, 0 if run.warm else 1)  # exact ties keep the warm start

    def descend(self, restart: int, start: IntArray | None) -> _Run | None:
        run, self.stop = _run(
            self.problem,
            first_iteration=self.iteration,
            restart=restart,
            seen=self.seen if restart >= 0 else None,
            warm=start,
        )
        if run is not None:
            self.iteration += run.n_iter
        return run

    def better(self, trial: _Run, run: _Run) -> bool:
        """A polishing step is taken when it ranks first by a clear energy margin (or, under
        the labels' rule, agrees with more labeled items)."""
        mine, theirs = self.rank(trial), self.rank(run)
        if mine[0] != theirs[0]:
            return mine[0] < theirs[0]
        return trial.energy < run.energy - MOVE_TOL

    def moves(self, assign: IntArray) -> Iterator[IntArray]:
        """The polishing starts around ``assign``: a cluster split in two into a slot CEC
        emptied; then each cluster dissolved, alone or with another split into its slot
        (largest first)."""
        p = self.problem
        live = np.unique(assign)
        sizes = np.bincount(assign, minlength=p.n_clusters)
        by_size = live[np.argsort(-sizes[live], kind="stable")]
        free = np.flatnonzero(sizes == 0)
        if free.shape[0] and self.splits:
            for other in by_size:
                yield split_cluster(p.X, self.whitening, assign, int(other), int(free[0]))
        if live.shape[0] < 2:
            return
        for cluster in live:
            emptied = without_cluster(
                p.X, assign, p.categories, p.n_categories, p.n_clusters, int(cluster),
                p.family, p.beta,
            )  # fmt: skip
            yield emptied
            for other in by_size if self.splits else ():
                if other != cluster:
                    yield split_cluster(p.X, self.whitening, emptied, int(other), int(cluster))

    def polished(self, run: _Run) -> _Run:
        """Descent over whole clusters from ``run`` (``polish``), within the budget: the
        first polishing start that ends lower is taken, and its neighbours tried next."""
        improved = True
        while improved and self.budget > 0:
            improved = False
            for candidate in self.moves(run.assign):
                if self.budget <= 0:
                    break
                self.budget -= 1
                trial = self.descend(-1, candidate)
                if self.stop:
                    return run
                if trial is not None and self.better(trial, run):
                    run = _continued(run, trial)
                    improved = True
                    break
        return run
