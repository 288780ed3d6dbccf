"""Transitive closure of must-links: connected components of the must-link graph."""

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def chunklet_ids(n_items: int, pairs: NDArray[np.int64]) -> NDArray[np.int64]:
    """Component id per item (an unlinked item is its own component); an empty array when
    there is no pair, which means every item is its own (at 20M items, 160 MB of 0..n-1 that
    every run without a must-link used to hold)."""
    if len(pairs) == 0:
        return np.empty(0, dtype=np.int64)
    graph = coo_matrix(
        (np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n_items, n_items)
    )
    _, components = connected_components(graph, directed=False)
    return components.astype(np.int64)


def chain_pairs(item_sets: list[NDArray[np.int64]]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Consecutive pairs within each set: k - 1 edges join k items, never k^2.

    Returns the pairs and, for each pair, the index of the set it came from.
    """
    sizes = np.array([len(s) for s in item_sets], dtype=np.int64)
    if sizes.sum() == 0:
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    items = np.concatenate(item_sets).astype(np.int64)
    owner = np.repeat(np.arange(len(item_sets)), sizes)
    same = owner[:-1] == owner[1:]
    pairs = np.column_stack([items[:-1][same], items[1:][same]])
    return pairs, owner[:-1][same]
