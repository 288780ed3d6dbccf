"""Are the cannot-links satisfiable with ``n_clusters`` groups, and if not, why not?

Every must-link chunklet lies in one group, so the constraints are feasible for k groups exactly
when the lifted cannot-link graph between chunklets can be properly coloured with k colours.
``colour_chunklets`` decides that with an exact search, and ``infeasible_core`` names a small
set of chunklets whose cannot-links alone already need more than k groups.

* Peeling: a chunklet with fewer than k cannot-linked neighbours (among those left) can always
  take a colour last, so the search runs on the k-core of the graph only. Such a chunklet is
  also never part of a minimal infeasible set (a (k+1)-critical graph has minimum degree >= k).
* Search: DSATUR (most-saturated chunklet first, colours tried in order, a new colour only after
  the used ones), with backtracking. Its first descent is the DSATUR greedy colouring, which is
  enough for constraints drawn from any real partition; the search is bounded by ``budget``
  visited nodes (``SearchBudget``), beyond which the answer is "unknown".
* Proof set: a clique of k + 1 mutually cannot-linked chunklets when a greedy clique search finds
  one (minimal by construction); otherwise the k-core shrunk by deletion: drop each chunklet whose
  removal keeps the rest infeasible. With every search decided the result is minimal (removing
  any one chunklet makes it feasible); a search that runs out of budget keeps its chunklet, so
  the set is then only "small", which the caller says.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.engine.arrays import IntArray

# nodes one exact colouring search may visit; constraints from real partitions need ~|core|
SEARCH_BUDGET = 200_000
# the backtracking recurses once per chunklet of the k-core; larger cores rely on the greedy
MAX_DEPTH = 800


class SearchBudget(Exception):
    """The exact search visited more than its budget of nodes without deciding."""


def adjacency(neg_ptr: IntArray, neg_idx: IntArray) -> list[set[int]]:
    """The lifted cannot-link relation (CSR) as neighbour sets."""
    n = neg_ptr.shape[0] - 1
    return [set(neg_idx[neg_ptr[c] : neg_ptr[c + 1]].tolist()) for c in range(n)]


def k_core(adj: list[set[int]], vertices: set[int], k: int) -> tuple[set[int], list[int]]:
    """The vertices left after repeatedly removing those of degree < k, and the removal order."""
    alive = set(vertices)
    degree = {v: len(adj[v] & alive) for v in alive}
    stack = [v for v in alive if degree[v] < k]
    removed: list[int] = []
    queued = set(stack)
    while stack:
        v = stack.pop()
        alive.discard(v)
        removed.append(v)
        for u in adj[v]:
            if u in alive and u not in queued:
                degree[u] -= 1
                if degree[u] < k:
                    queued.add(u)
                    stack.append(u)
    return alive, removed


def _most_saturated(
    adj: list[set[int]], vertices: list[int], inside: set[int], colour: dict[int, int]
) -> int:
    """The uncoloured vertex with the most distinct neighbour colours (then most neighbours)."""
    best, key = -1, (-1, -1)
    for v in vertices:
        if v not in colour:
            around = adj[v] & inside
            saturation = len({colour[u] for u in around if u in colour})
            if (saturation, len(around)) > key:
                best, key = v, (saturation, len(around))
    return best


def _search(adj: list[set[int]], vertices: list[int], k: int, budget: int) -> dict[int, int] | None:
    """Exact DSATUR backtracking on ``vertices``: a colouring with < k + 1 colours or None
    (proved impossible); raises ``SearchBudget`` past ``budget`` nodes."""
    colour: dict[int, int] = {}
    inside = set(vertices)
    nodes = 0

    def descend(used: int) -> bool:
        nonlocal nodes
        if len(colour) == len(vertices):
            return True
        nodes += 1
        if nodes > budget:
            raise SearchBudget
        v = _most_saturated(adj, vertices, inside, colour)
        taken = {colour[u] for u in adj[v] if u in colour}
        for c in range(min(used + 1, k)):  # a fresh colour is tried once (symmetry)
            if c not in taken:
                colour[v] = c
                if descend(max(used, c + 1)):
                    return True
                del colour[v]
        return False

    if _greedy(adj, vertices, k, colour):
        return dict(colour)
    colour.clear()
    if len(vertices) > MAX_DEPTH:
        raise SearchBudget
    return dict(colour) if descend(0) else None


def _greedy(adj: list[set[int]], vertices: list[int], k: int, colour: dict[int, int]) -> bool:
    """The first descent of the search without recursion: DSATUR greedy, smallest free colour."""
    inside = set(vertices)
    for _ in vertices:
        best = _most_saturated(adj, vertices, inside, colour)
        free = set(range(k)) - {colour[u] for u in adj[best] if u in colour}
        if not free:
            return False
        colour[best] = min(free)
    return True


def colourable(adj: list[set[int]], vertices: set[int], k: int, budget: int) -> bool:
    """Whether ``vertices`` can be k-coloured (``SearchBudget`` if undecided)."""
    core, _ = k_core(adj, vertices, k)
    return _search(adj, sorted(core), k, budget) is not None


def colour_chunklets(
    neg_ptr: IntArray, neg_idx: IntArray, k: int, budget: int = SEARCH_BUDGET
) -> IntArray | None:
    """A colour in 0..k-1 per chunklet with no cannot-link inside a colour, or None when none
    exists. Raises ``SearchBudget`` when the bounded search cannot decide."""
    adj = adjacency(neg_ptr, neg_idx)
    n = len(adj)
    core, removed = k_core(adj, set(range(n)), k)
    found = _search(adj, sorted(core), k, budget)
    if found is None:
        return None
    colour = np.zeros(n, dtype=np.int64)
    for v, c in found.items():
        colour[v] = c
    for v in reversed(removed):  # fewer than k coloured neighbours when put back
        taken = {int(colour[u]) for u in adj[v] if u in core}
        colour[v] = min(set(range(k)) - taken)
        core.add(v)
    return colour


def _greedy_clique(adj: list[set[int]], vertices: set[int], size: int) -> list[int] | None:
    """A clique of ``size`` vertices grown greedily from each vertex (highest degree first)."""
    order = sorted(vertices, key=lambda v: -len(adj[v] & vertices))
    for start in order:
        clique = [start]
        candidates = adj[start] & vertices
        while candidates and len(clique) < size:
            v = max(candidates, key=lambda u: len(adj[u] & candidates))
            clique.append(v)
            candidates &= adj[v]
        if len(clique) >= size:
            return clique
    return None


@dataclass(frozen=True)
class Core:
    """Chunklets whose cannot-links alone need more than k groups."""

    chunklets: list[int]
    is_clique: bool
    minimal: bool  # every shrinking search was decided


def infeasible_core(
    neg_ptr: IntArray, neg_idx: IntArray, k: int, budget: int = SEARCH_BUDGET
) -> Core:
    """The proof set of an infeasible instance (the caller knows it is infeasible)."""
    adj = adjacency(neg_ptr, neg_idx)
    core, _ = k_core(adj, set(range(len(adj))), k)
    clique = _greedy_clique(adj, core, k + 1)
    if clique is not None:
        return Core(sorted(clique), is_clique=True, minimal=True)
    minimal = True
    for v in sorted(core, key=lambda u: len(adj[u] & core)):
        if v not in core:
            continue
        rest = core - {v}
        try:
            feasible = colourable(adj, rest, k, budget)
        except SearchBudget:
            minimal = False
            continue
        if not feasible:
            core, _ = k_core(adj, rest, k)
    return Core(sorted(core), is_clique=False, minimal=minimal)


def _describe(points: IntArray, limit: int = 6) -> str:
    shown = ", ".join(str(p) for p in points[:limit].tolist())
    more = f", ... ({points.shape[0]} points)" if points.shape[0] > limit else ""
    return "{" + shown + more + "}"


def require_colouring(
    chunk: IntArray, neg_ptr: IntArray, neg_idx: IntArray, cannot_link: IntArray, k: int
) -> IntArray:
    """``colour_chunklets``, or a ``ValueError`` naming the chunklets (by their points) and the
    cannot_link rows that make k groups impossible."""
    try:
        colour = colour_chunklets(neg_ptr, neg_idx, k)
    except SearchBudget:
        raise ValueError(
            f"could not decide within {SEARCH_BUDGET} search steps whether the cannot-links can "
            f"be satisfied with n_clusters={k} groups; increase n_clusters"
        ) from None
    if colour is not None:
        return colour
    proof = infeasible_core(neg_ptr, neg_idx, k)
    members = np.asarray(proof.chunklets, dtype=np.int64)
    groups = "; ".join(_describe(np.flatnonzero(chunk == c)) for c in proof.chunklets)
    inside = np.isin(chunk[cannot_link], members).all(axis=1)
    rows = ", ".join(str(r) for r in np.flatnonzero(inside).tolist())
    if proof.is_clique:
        why = f"these {len(proof.chunklets)} must-link groups are pairwise cannot-linked"
    elif proof.minimal:
        why = (
            f"the cannot-links among these {len(proof.chunklets)} must-link groups need more "
            "than that, and dropping any one group makes them satisfiable"
        )
    else:
        why = (
            f"the cannot-links among these {len(proof.chunklets)} must-link groups need more "
            "than that (the set was shrunk within a search budget, so it may not be minimal)"
        )
    raise ValueError(
        f"the constraints cannot be satisfied with n_clusters={k} groups: {why}: {groups} "
        f"(cannot_link rows {rows}); increase n_clusters or remove one of these cannot-links"
    )
