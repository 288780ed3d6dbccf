"""C4s step 1 and step 4: chunklets from must-links, lifted cannot-links, and the final merge.

* ``check_pairs`` validates an (m, 2) index array; ``aggregate`` closes the must-links
  transitively into initial chunklets (union-find, spec c4s.md Sec. 3.2), lifts cannot-links to
  chunklets and refuses contradictory input with a ``ValueError`` that names the must-link chain
  joining a cannot-link pair (DESIGN.md Sec. 4: conflicts are reported, never "fixed").
* ``merge_clusters`` is the closure cl^inf of Sec. 2.6: clusters holding parts of one initial
  chunklet become one output group.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from app.engine.arrays import IntArray
from app.engine.side_info import PAIRS_NAME_ROWS


def check_pairs(name: str, pairs: ArrayLike | None, n_samples: int) -> IntArray:
    """``pairs`` as an (m, 2) int64 array of indices in [0, n_samples); None means no pairs."""
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64)
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must be an (m, 2) array of index pairs, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer point indices")
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer point indices, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    bad = (out < 0) | (out >= n_samples)
    if np.any(bad):
        row = int(np.nonzero(bad.any(axis=1))[0][0])
        raise ValueError(
            f"{name} row {row} is ({out[row, 0]}, {out[row, 1]}), but point indices must be in "
            f"[0, {n_samples - 1}]{PAIRS_NAME_ROWS}"
        )
    return out


def _find(parent: IntArray, x: int) -> int:
    root = x
    while parent[root] != root:
        root = int(parent[root])
    while parent[x] != root:
        parent[x], x = root, int(parent[x])
    return root


@dataclass(frozen=True)
class Chunklets:
    """Initial chunklets: ``chunk[i]`` in 0..K-1 per point; ``neg_ptr``/``neg_idx`` list, in CSR
    form, the chunklets each chunklet cannot link to (the lifted relation, no duplicates)."""

    chunk: IntArray
    n_chunklets: int
    neg_ptr: IntArray
    neg_idx: IntArray


def _must_link_path(must_link: IntArray, n_samples: int, a: int, b: int) -> list[int]:
    """A shortest chain of must-links from point a to point b (breadth-first search)."""
    neighbours: dict[int, list[int]] = {}
    for x, y in must_link.tolist():
        neighbours.setdefault(x, []).append(y)
        neighbours.setdefault(y, []).append(x)
    previous = {a: a}
    queue = deque([a])
    while queue:
        x = queue.popleft()
        if x == b:
            break
        for y in neighbours.get(x, []):
            if y not in previous:
                previous[y] = x
                queue.append(y)
    path = [b]
    while path[-1] != a:
        path.append(previous[path[-1]])
    return path[::-1]


def aggregate(n_samples: int, must_link: IntArray, cannot_link: IntArray) -> Chunklets:
    """Transitive closure of the must-links and the lifted cannot-link relation."""
    parent = np.arange(n_samples, dtype=np.int64)
    for x, y in must_link.tolist():
        rx, ry = _find(parent, x), _find(parent, y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    roots = np.array([_find(parent, i) for i in range(n_samples)], dtype=np.int64)
    _, chunk = np.unique(roots, return_inverse=True)
    chunk = chunk.astype(np.int64)
    n_chunklets = int(chunk.max()) + 1 if n_samples else 0
    for row, (x, y) in enumerate(cannot_link.tolist()):
        if x == y:
            raise ValueError(f"cannot_link row {row} pairs point {x} with itself")
        if chunk[x] == chunk[y]:
            chain = " - ".join(str(p) for p in _must_link_path(must_link, n_samples, x, y))
            raise ValueError(
                f"contradictory constraints: cannot_link row {row} separates points {x} and {y}, "
                f"but the must-link chain {chain} joins them"
            )
    lifted = np.unique(
        np.concatenate([chunk[cannot_link], chunk[cannot_link][:, ::-1]]).reshape(-1, 2), axis=0
    )
    counts = np.bincount(lifted[:, 0], minlength=n_chunklets) if lifted.size else None
    neg_ptr = np.zeros(n_chunklets + 1, dtype=np.int64)
    if counts is not None:
        neg_ptr[1:] = np.cumsum(counts)
    neg_idx = lifted[:, 1].astype(np.int64) if lifted.size else np.empty(0, dtype=np.int64)
    return Chunklets(chunk, n_chunklets, neg_ptr, neg_idx)


def dense_by_first_occurrence(labels: IntArray) -> IntArray:
    """Renumber labels 0..k'-1 in the order in which they first occur."""
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    relabel = np.full(int(labels.max()) + 1, -1, dtype=np.int64)
    relabel[order] = np.arange(order.shape[0])
    return relabel[labels]


def merge_clusters(cluster_of_point: IntArray, chunk: IntArray, n_clusters: int) -> IntArray:
    """Group label per point: clusters sharing an initial chunklet merged transitively."""
    parent = np.arange(n_clusters, dtype=np.int64)
    first: dict[int, int] = {}
    for c, p in zip(chunk.tolist(), cluster_of_point.tolist(), strict=True):
        if c in first:
            ra, rb = _find(parent, first[c]), _find(parent, p)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        else:
            first[c] = p
    roots = np.array([_find(parent, c) for c in range(n_clusters)], dtype=np.int64)
    return dense_by_first_occurrence(roots[cluster_of_point])
