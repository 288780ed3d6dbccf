"""Transitive closure of must-links: connected components of the must-link graph."""

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def chunklet_ids(n_items: int, pairs: NDArray[np.int64]) -> NDArray[np.int64]:
    """Component id per item: its component's smallest item (an unlinked item is its own
    component); an empty array when there is no pair, which means every item is its own (at 20M
    items, 160 MB of 0..n-1 that every run without a must-link used to hold). Components are
    found among the linked items only, not on a graph of every item."""
    if len(pairs) == 0:
        return np.empty(0, dtype=np.int64)
    nodes, ends = np.unique(pairs, return_inverse=True)
    ends = ends.reshape(-1, 2)
    graph = coo_matrix(
        (np.ones(len(ends), dtype=np.int8), (ends[:, 0], ends[:, 1])),
        shape=(len(nodes), len(nodes)),
    )
    _, components = connected_components(graph, directed=False)
    smallest = np.full(int(components.max()) + 1, n_items, dtype=np.int64)
    np.minimum.at(smallest, components, nodes)
    ids = np.arange(n_items, dtype=np.int64)
    ids[nodes] = smallest[components]
    return ids


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
