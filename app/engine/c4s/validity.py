"""The exact cannot-link validity check of C4s (spec c4s.md Sec. 2.7.5).

The global stage moves *items* (final chunklets) between clusters. After the final merge
(cl^inf: clusters sharing an initial chunklet become one group) no cannot-link may join two
chunklets in one group (Theorem 2). Moving item t into cluster b is valid iff, with t placed in b,
the component R of b in the cluster graph "linked by a split initial chunklet" holds no two
negatively related initial chunklets. Only R needs checking: every other component after the
move is a subset of a component that was valid before it.

This replaces the paper's Theorem 3, which accepts invalid moves of sibling-free chunklets (spec
Sec. 2.7.4, test T-V1) and rejects some valid ones (T-V2). Items whose initial chunklet is unsplit
and has no cannot-link are never checked: they link nothing and bring no negative. Items with
cluster -1 are ignored (not placed yet). Cost O(|watched items| + k + sum |neg|) per check.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from app.engine.arrays import BoolArray, IntArray


class CannotLinkGraph(NamedTuple):
    """What the check reads, plus its scratch arrays (so a check allocates nothing)."""

    item_chunk: IntArray  # (m,) initial chunklet of each item
    watched: BoolArray  # (m,) the item's chunklet is split or has a cannot-link
    watched_items: IntArray  # indices of the watched items
    split: BoolArray  # (K,) the chunklet was split into >= 2 items
    has_neg: BoolArray  # (K,) the chunklet has a cannot-link
    neg_ptr: IntArray  # (K + 1,) CSR of the lifted cannot-link relation
    neg_idx: IntArray
    parent: IntArray  # (k,) scratch: union-find over clusters
    first: IntArray  # (K,) scratch: first cluster seen per chunklet
    member: BoolArray  # (K,) scratch: chunklet present in the component


def new_graph(
    item_chunk: IntArray, n_chunklets: int, neg_ptr: IntArray, neg_idx: IntArray, n_clusters: int
) -> CannotLinkGraph:
    """The graph for items labelled by their initial chunklet."""
    items_per_chunk = np.bincount(item_chunk, minlength=n_chunklets)
    split = items_per_chunk >= 2
    has_neg = np.diff(neg_ptr) > 0
    watched = split[item_chunk] | has_neg[item_chunk]
    return CannotLinkGraph(
        item_chunk=item_chunk,
        watched=watched,
        watched_items=np.nonzero(watched)[0].astype(np.int64),
        split=split,
        has_neg=has_neg,
        neg_ptr=neg_ptr,
        neg_idx=neg_idx,
        parent=np.arange(n_clusters, dtype=np.int64),
        first=np.full(n_chunklets, -1, dtype=np.int64),
        member=np.zeros(n_chunklets, dtype=np.bool_),
    )


@numba.njit(nogil=True, cache=True)
def _find(parent: IntArray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(nogil=True, cache=True)
def component_is_valid(b: int, item_cluster: IntArray, graph: CannotLinkGraph) -> bool:
    """No two negatively related chunklets in the cl^inf component of cluster ``b``."""
    parent = graph.parent
    for c in range(parent.shape[0]):
        parent[c] = c
    watched = graph.watched_items
    chunk = graph.item_chunk
    for s in range(watched.shape[0]):
        c = chunk[watched[s]]
        graph.first[c] = -1
        graph.member[c] = False
    for s in range(watched.shape[0]):
        t = watched[s]
        p = item_cluster[t]
        c = chunk[t]
        if p < 0 or not graph.split[c]:
            continue
        if graph.first[c] < 0:
            graph.first[c] = p
        else:
            ra = _find(parent, graph.first[c])
            rb = _find(parent, p)
            if ra != rb:
                parent[rb] = ra
    root = _find(parent, b)
    for s in range(watched.shape[0]):
        t = watched[s]
        p = item_cluster[t]
        c = chunk[t]
        if p >= 0 and graph.has_neg[c] and _find(parent, p) == root:
            graph.member[c] = True
    for s in range(watched.shape[0]):
        c = chunk[watched[s]]
        if graph.member[c]:
            for e in range(graph.neg_ptr[c], graph.neg_ptr[c + 1]):
                if graph.member[graph.neg_idx[e]]:
                    return False
    return True


@numba.njit(nogil=True, cache=True)
def move_is_valid(t: int, b: int, item_cluster: IntArray, graph: CannotLinkGraph) -> bool:
    """Whether putting item ``t`` into cluster ``b`` keeps every cannot-link satisfiable."""
    if not graph.watched[t]:
        return True
    old = item_cluster[t]
    item_cluster[t] = b
    valid = component_is_valid(b, item_cluster, graph)
    item_cluster[t] = old
    return valid
