"""The questions whose answers would most change a fitted clustering.

The rule (documented in docs/api.md, "Suggestions"), deterministic for a given partition and side
information:

1. Every item gets Gaussian posteriors over the result's clusters (``cluster_posteriors``) and an
   uncertainty ``u = 1 - (p_first - p_second)``: 0 where one cluster owns the item, 1 on a tie.
2. What the expert already said groups items into *components* (must-links joined transitively,
   items with the same label joined) and marks pairs of components *different* (a cannot-link
   between them, or two different labels). A question whose answer is already implied is never
   asked.
3. Each cluster has an *anchor*: the item the expert already knows best there (one of the largest
   component lying mostly in the cluster), else the cluster's most typical item (highest
   density).
4. Item questions (``kind=items``): unlabeled items by decreasing ``u``.
   Pair questions (``kind=pairs``): for two clusters whose anchors are not yet related, "are
   these anchors the same?", scored 1 + the clusters' overlap (the posterior mass they share,
   relative to the smaller one), so they come first; and for an unresolved item (its component
   is a single unlabeled item), "is it the same as the anchor of its first cluster?" (of its
   second when the first is known to be different, or, between named groups, when the run put
   the item in the second's cluster and not the first's), scored by ``u``. Once the expert has named
   two groups or more (labeled items, components of two items or more, or clusters' anchors
   told apart from another item, so from the first "different" anchor answer), the boundary
   questions measure ``u`` and pick anchors between those *groups* instead of the run's
   clusters (the run's boundary may be wrong where the expert's groups are not), with one
   covariance shared by the groups (``tied``: a few named items per group say how the groups
   differ, not how each is shaped), shrunk toward the run's pooled variances while the groups
   are small, and equal weights (a group's size counts the questions asked about it). The
   score is ``u ** trust`` times the item's distance to the nearest named item (standardised
   features, over the largest such distance), so questions cover the data instead of crowding
   one spot; ``trust`` = degrees / (degrees + 3 d) grows with the named items the groups'
   covariance is estimated from (degrees = named items - groups): with a few, questions go
   farthest-first (as MinMax explores), with many, to the boundary. On breast cancer the
   groups and the distance took ARI after 100 answers from 0.27 to 0.91; trust took it after
   25 answers from 0.68 to 0.77.
   The first questions a fresh result asks are therefore anchor pairs, which lay a
   cannot-link skeleton across the clusters, then items far from everything named (the
   "explore" step of the active-learning literature), then boundary items as the groups fill
   (the "consolidate" step).
5. A batch is chosen greedily, best score first, where every question already chosen about the
   same pair of clusters halves a candidate's score, so one boundary does not take the whole
   batch. Ties break by item index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from app.engine.active.posteriors import ClusterPosteriors, cluster_posteriors
from app.engine.arrays import FloatArray, IntArray

SAME_PAIR_DISCOUNT = 0.5  # per question already chosen for the same pair of clusters
BOUNDARY_CANDIDATES_PER_QUESTION = 4
# Degrees of freedom per dimension at which the named groups' uncertainty counts half in a
# question's score (``_trust``). bench_active, 20 subsampled draws, breast cancer ARI after 25
# answers: 0.681 (uncertainty always counts fully), 0.708 at 1, 0.741 at 2, 0.766 at 3, 0.769 at 5.
EXPLORE_DEGREES = 3
# While the named groups' model is trusted less than this (a few named items), the run's
# clusters decide which group an item is asked about first (``_boundary_questions``).
# bench_active, 20 draws, ARI at 10 answers: wine 0.948 -> 0.950, iris 0.902 -> 0.904, breast
# cancer 0.628 -> 0.618; at 0.5 the single digits draw fell from 0.592 to 0.520 at 100 answers
# (its run, ARI 0.5, is a worse guide than ten named groups).
RUN_BEFORE_GROUPS_BELOW = 0.1


@dataclass(frozen=True)
class Question:
    kind: str  # "pair" (same or different?) | "item" (which label?)
    items: tuple[int, ...]
    score: float
    reason: str
    clusters: tuple[int, int]  # the two cluster ids the question is about


@dataclass(frozen=True)
class Knowledge:
    """What the expert already said, as components and pairs of different components."""

    component: IntArray  # (n,) component id per item
    sizes: IntArray  # items per component
    labeled: NDArray[np.bool_]  # per component: does it carry a label?
    different: frozenset[tuple[int, int]]  # (low, high) component ids known to differ

    def related(self, i: int, j: int) -> bool:
        a, b = int(self.component[i]), int(self.component[j])
        return a == b or (min(a, b), max(a, b)) in self.different


def knowledge(
    n_items: int,
    labels: ArrayLike | None = None,
    must_link: ArrayLike | None = None,
    cannot_link: ArrayLike | None = None,
) -> Knowledge:
    """Components and known differences from labels (-1 = none), must-links and cannot-links."""
    known = np.full(n_items, -1, dtype=np.int64) if labels is None else np.asarray(labels)
    if known.shape != (n_items,):
        raise ValueError(f"labels must have one entry per item ({n_items}), got {known.shape}")
    edges = [_pairs(must_link, n_items, "must_link")]
    for label in np.unique(known[known >= 0]):
        members = np.flatnonzero(known == label)
        edges.append(np.column_stack([members[:-1], members[1:]]))
    joined = np.concatenate(edges)
    graph = coo_matrix(
        (np.ones(joined.shape[0], dtype=np.int8), (joined[:, 0], joined[:, 1])),
        shape=(n_items, n_items),
    )
    _, component = connected_components(graph, directed=False)
    component = component.astype(np.int64)
    sizes = np.bincount(component).astype(np.int64)
    labeled = np.zeros(sizes.size, dtype=bool)
    labeled[component[known >= 0]] = True
    different: set[tuple[int, int]] = set()
    for i, j in _pairs(cannot_link, n_items, "cannot_link"):
        a, b = int(component[i]), int(component[j])
        different.add((min(a, b), max(a, b)))
    label_of = {int(component[i]): int(known[i]) for i in np.flatnonzero(known >= 0)}
    components = sorted(label_of)
    for x, a in enumerate(components):
        for b in components[x + 1 :]:
            if label_of[a] != label_of[b]:
                different.add((a, b))
    return Knowledge(component, sizes, labeled, frozenset(different))


def suggest_items(
    X: ArrayLike, partition: ArrayLike, n: int, known: Knowledge | None = None
) -> list[Question]:
    """The ``n`` items whose label would help most (rule 4)."""
    model = cluster_posteriors(X, partition)
    facts = known or knowledge(model.posteriors.shape[0])
    first, second, p_first, p_second = model.top_two()
    uncertainty = model.margin_uncertainty()
    candidates = []
    for i in np.lexsort((np.arange(uncertainty.size), -uncertainty)):
        if facts.labeled[facts.component[i]]:
            continue
        a, b = model.cluster_ids[first[i]], model.cluster_ids[second[i]]
        reason = (
            f"item {i} lies between clusters {a} and {b} "
            f"(posterior {p_first[i]:.2f} vs {p_second[i]:.2f})"
        )
        candidates.append(Question("item", (int(i),), float(uncertainty[i]), reason, (a, b)))
    return _spread(candidates, n)


def suggest_pairs(
    X: ArrayLike, partition: ArrayLike, n: int, known: Knowledge | None = None
) -> list[Question]:
    """The ``n`` "same or different?" questions whose answers would most change the fit."""
    model = cluster_posteriors(X, partition)
    labels = np.asarray(partition).astype(np.int64)
    facts = known or knowledge(labels.size)
    anchors = _anchors(model, labels, facts)
    candidates = _anchor_questions(model, anchors, facts)
    groups = _named_groups(facts, anchors)
    if np.unique(groups[groups >= 0]).size >= 2:
        # Rule 4b: once the expert has named two groups or more, boundaries are measured
        # between those groups (what is known), not between the run's clusters.
        # One shared covariance (per-group shapes from a few items each mislead) and equal
        # weights (how many items a group has says how often it was asked about, not how
        # common it is). bench_active, 20 subsampled draws, breast cancer ARI after 25 and 50
        # answers: 0.584 and 0.733 -> 0.681 and 0.814 (docs/active.md).
        group_model = cluster_posteriors(
            X, groups, fallback_pooled=model.pooled, tied=True, equal_weights=True
        )
        group_anchors = _anchors(group_model, groups, facts)
        reach = _distance_to_named(np.asarray(X, dtype=np.float64), groups >= 0)
        candidates += _boundary_questions(
            group_model, group_anchors, facts, n, labels, "groups", reach, _trust(groups, X)
        )
    else:
        candidates += _boundary_questions(model, anchors, facts, n, labels, "clusters", None, 1.0)
    return _spread(candidates, n)


def _trust(groups: IntArray, X: ArrayLike) -> float:
    """How far the named groups' model is trusted: degrees / (degrees + EXPLORE_DEGREES * d),
    where degrees = named items - groups (what the shared covariance is estimated from). Its
    uncertainty enters a question's score with this power: 0 (a few named items) asks by reach
    alone, farthest-first as MinMax explores; towards 1 it asks at the boundary."""
    named = groups[groups >= 0]
    degrees = max(named.size - np.unique(named).size, 0)
    d = np.shape(X)[1]
    return degrees / (degrees + EXPLORE_DEGREES * d)


def _distance_to_named(X: FloatArray, named: NDArray[np.bool_]) -> FloatArray:
    """Per item, its distance to the nearest named item (standardised features), over the
    largest such distance: 0 beside what the expert named, 1 for the item furthest from it."""
    scale = X.std(axis=0)
    scaled = X / np.where(scale > 0, scale, 1.0)
    distance, _ = cKDTree(scaled[named]).query(scaled)
    top = float(distance.max())
    return np.asarray(distance / top if top > 0 else np.ones_like(distance), dtype=np.float64)


def _named_groups(facts: Knowledge, anchors: list[int]) -> IntArray:
    """Per item, its component when the expert has named it, else -1. Named: labeled, two
    items or more linked, or a cluster's anchor the expert has told apart from another item
    (the anchor questions' skeleton: without it a cluster whose anchor has no must-link yet
    is no group, its items look far from every group, and each costs a "different" answer
    per named group while never being asked about its own anchor). Anchors told apart count
    from the first answer: two of them are two groups, so the next questions explore
    farthest-first instead of refining the run's boundary, which may be the wrong one
    (breast cancer's core-and-halo split; docs/active.md, change 4)."""
    named = facts.labeled | (facts.sizes >= 2)
    told_apart = {c for pair in facts.different for c in pair}
    for anchor in anchors:
        if int(facts.component[anchor]) in told_apart:
            named[facts.component[anchor]] = True
    return np.where(named[facts.component], facts.component, -1)


def _anchors(model: ClusterPosteriors, labels: IntArray, facts: Knowledge) -> list[int]:
    """Rule 3: per cluster, an item of its largest known component (two items or more, a
    label, or an item told apart from another), the most typical of them; else its most
    typical item. An item already asked about stays its cluster's anchor: were the most typical
    item chosen afresh after every run, the anchors would move with the partition and the
    anchor questions never end (digits, 10 clusters: 100 of 100 answers)."""
    told_apart = np.zeros(facts.sizes.size, dtype=bool)
    for pair in facts.different:
        told_apart[list(pair)] = True
    anchors = []
    for column, cluster in enumerate(model.cluster_ids):
        members = np.flatnonzero(labels == cluster)
        comps, counts = np.unique(facts.component[members], return_counts=True)
        # A component "lies mostly in" the cluster when over half its items are there.
        mostly = counts * 2 > facts.sizes[comps]
        named = (facts.sizes[comps] >= 2) | facts.labeled[comps] | told_apart[comps]
        known = comps[mostly & named]
        pool = members
        if known.size:
            largest = known[facts.sizes[known] == facts.sizes[known].max()]
            pool = members[np.isin(facts.component[members], largest)]
        typicality = model.log_density[pool, column]
        anchors.append(int(pool[np.argmax(typicality)]))
    return anchors


def _anchor_questions(
    model: ClusterPosteriors, anchors: list[int], facts: Knowledge
) -> list[Question]:
    k = len(anchors)
    if k < 2:
        return []
    # Posterior mass each pair of clusters shares (one n x k slab at a time: n may be 1M).
    shared = np.array(
        [np.minimum(model.posteriors[:, [a]], model.posteriors).sum(0) for a in range(k)]
    )
    mass = model.posteriors.sum(axis=0)
    questions = []
    for a in range(k):
        for b in range(a + 1, k):
            if facts.related(anchors[a], anchors[b]):
                continue
            overlap = float(shared[a, b] / max(min(mass[a], mass[b]), 1e-12))
            ids = (int(model.cluster_ids[a]), int(model.cluster_ids[b]))
            reason = (
                f"are clusters {ids[0]} and {ids[1]} one group? items {anchors[a]} and "
                f"{anchors[b]} are typical of each (overlap {overlap:.2f})"
            )
            # An unrelated anchor pair outranks boundary items: until the expert has said
            # whether two clusters differ, no boundary between them is worth refining.
            questions.append(Question("pair", (anchors[a], anchors[b]), 1.0 + overlap, reason, ids))
    return questions


def _boundary_questions(
    model: ClusterPosteriors,
    anchors: list[int],
    facts: Knowledge,
    n: int,
    partition: IntArray,
    between: str,
    reach: FloatArray | None,
    trust: float,
) -> list[Question]:
    first, second, p_first, p_second = model.top_two()
    uncertainty = model.margin_uncertainty() ** trust
    if reach is not None:
        uncertainty = uncertainty * reach
    anchor_set = set(anchors)
    questions: list[Question] = []
    # Most uncertain first; a batch of n never needs more than a few n per pair of clusters.
    enough = BOUNDARY_CANDIDATES_PER_QUESTION * n * max(len(anchors) ** 2, 1)
    for i in np.lexsort((np.arange(uncertainty.size), -uncertainty)):
        if len(questions) >= enough:
            break
        component = facts.component[i]
        if facts.sizes[component] > 1 or facts.labeled[component] or i in anchor_set:
            continue  # already tied to what the expert said
        order = ((first[i], p_first[i]), (second[i], p_second[i]))
        if (
            between == "groups"
            and trust < RUN_BEFORE_GROUPS_BELOW
            and partition[anchors[second[i]]] == partition[i] != partition[anchors[first[i]]]
        ):
            # The run puts the item with the second group's anchor, and the groups' model is
            # not yet trusted: ask about that group first, a "same" answer grows it.
            order = order[::-1]
        for column, p in order:
            anchor = anchors[column]
            if facts.related(i, anchor):
                continue
            other = second[i] if column == first[i] else first[i]
            ids = (int(partition[anchor]), int(partition[anchors[other]]))
            reason = (
                f"item {i} lies between the {between} of items {anchor} and {anchors[other]} "
                f"(posterior {p:.2f} for {anchor}'s); is it the same as item {anchor}?"
            )
            questions.append(Question("pair", (int(i), anchor), float(uncertainty[i]), reason, ids))
            break
    return questions


def _spread(candidates: list[Question], n: int) -> list[Question]:
    """Rule 5: greedily the best question, where each one already chosen for the same pair of
    clusters halves a candidate's score (so one boundary does not take the whole batch)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    pending = sorted(candidates, key=lambda q: (-q.score, q.items))
    chosen: list[Question] = []
    per_pair: dict[tuple[int, int], int] = {}
    while pending and len(chosen) < n:
        discounted = [q.score * SAME_PAIR_DISCOUNT ** per_pair.get(_pair(q), 0) for q in pending]
        best = pending.pop(int(np.argmax(discounted)))  # first maximum: ties keep the order
        per_pair[_pair(best)] = per_pair.get(_pair(best), 0) + 1
        chosen.append(best)
    return chosen


def _pair(question: Question) -> tuple[int, int]:
    return min(question.clusters), max(question.clusters)


def _pairs(pairs: ArrayLike | None, n_items: int, name: str) -> IntArray:
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64)
    array = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if array.size and (array.min() < 0 or array.max() >= n_items):
        raise ValueError(f"{name} names an item outside 0..{n_items - 1}")
    return array
