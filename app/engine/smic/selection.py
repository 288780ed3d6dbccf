"""Choosing one labelling among the candidates (kernel, t) by LSMI, robust to near-ties.

LSMI is an estimate: on the double spirals (seed 1, degree-normalised kernel) the labelling of
t = 4, which splits the arms (ARI 0.49), scores 0.4945 and the correct one of t = 5..9 scores
0.4944. A plain arg-max then follows estimation noise from draw to draw. The rule here:

1. fewest violated constraints first (always 0 without side information);
2. among the rest, candidates whose LSMI lies within ``NEAR_TOL * (c - 1) / 2`` of the best are
   *nearly equal*; (c - 1) / 2 is the largest SMI any labelling into c classes can have, so
   the tolerance is a fixed fraction of the attainable range whatever c;
3. among the nearly equal, the partition produced by the most candidates wins (a plateau of t
   over which the labels do not change is stable against the draw), then the larger LSMI,
   then the smaller t and the kernel listed first (spec A10).

Selection is *ambiguous* when a nearly equal labelling that was not chosen disagrees with the
chosen one (ARI below ``AGREE_ARI``); the estimator then warns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import adjusted_rand_score

from app.engine.arrays import IndexArray

NEAR_TOL = 0.005  # LSMI gaps below 0.5% of (c - 1) / 2 are within the estimator's noise
AGREE_ARI = 0.9  # rivals that agree this well with the choice are not a different answer
CLEAR_PEAK_TOL = 0.05  # early stop: this far below the best, 10x the near-tie tolerance
PEAK_PATIENCE = 3  # ... for this many consecutive t


@dataclass(frozen=True)
class Scored:
    """What selection needs to know about one candidate."""

    kernel: int  # position of the kernel in the estimator's kernel list
    t: int
    labels: IndexArray
    smi: float
    violations: int


@dataclass(frozen=True)
class Selection:
    chosen: int  # index into the candidate list
    support: int  # candidates with the chosen labels
    rival: int | None  # the best-scoring nearly equal candidate with different labels
    rival_ari: float  # ARI between chosen and rival labels (nan without rival)


def canonical(labels: IndexArray) -> bytes:
    """The partition of `labels`, independent of cluster numbering (first occurrence order)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()].astype(np.int64).tobytes()


def near_tolerance(n_clusters: int) -> float:
    return NEAR_TOL * max(n_clusters - 1, 1) / 2.0


def select(candidates: Sequence[Scored], n_clusters: int) -> Selection:
    """Apply rules 1-3 of the module docstring; candidates must be non-empty."""
    fewest = min(c.violations for c in candidates)
    pool = [i for i, c in enumerate(candidates) if c.violations == fewest]
    best_smi = max(candidates[i].smi for i in pool)
    near = [i for i in pool if candidates[i].smi >= best_smi - near_tolerance(n_clusters)]
    groups: dict[bytes, list[int]] = {}
    for i in near:
        groups.setdefault(canonical(candidates[i].labels), []).append(i)

    def group_rank(members: list[int]) -> tuple[int, float, int, int]:
        first = min(members, key=lambda i: (candidates[i].t, candidates[i].kernel))
        return (-len(members), -candidates[members[0]].smi, candidates[first].t, first)

    ordered = sorted(groups.values(), key=group_rank)
    winner = ordered[0]
    chosen = min(winner, key=lambda i: (candidates[i].t, candidates[i].kernel))
    rival, rival_ari = None, float("nan")
    for group in sorted(ordered[1:], key=lambda g: -candidates[g[0]].smi):
        ari = float(adjusted_rand_score(candidates[chosen].labels, candidates[group[0]].labels))
        if ari < AGREE_ARI:
            rival = min(group, key=lambda i: (candidates[i].t, candidates[i].kernel))
            rival_ari = ari
            break
    return Selection(chosen=chosen, support=len(winner), rival=rival, rival_ari=rival_ari)


def clearly_past_peak(curve: Sequence[float], n_clusters: int) -> bool:
    """True once the last PEAK_PATIENCE entries all lie CLEAR_PEAK_TOL * (c-1)/2 below the best.

    `curve` holds the best LSMI of each evaluated t, in increasing t. LSMI curves over t have
    dips and recoveries of a few percent (digits: t = 6 is 9% below t = 4, t = 7 above it), so
    only a sustained, large drop counts as a peak that has passed.
    """
    if len(curve) <= PEAK_PATIENCE:
        return False
    best = max(curve)
    margin = CLEAR_PEAK_TOL * max(n_clusters - 1, 1) / 2.0
    return all(v < best - margin for v in curve[-PEAK_PATIENCE:])
