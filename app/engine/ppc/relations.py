"""PPC relations as given: validation of pairs and weights (every error names the offending
pair), contradictions between hard links and hard do-not-links, chunklets of hard links, and
labels checked against them. `graph.py` turns validated relations into the E-step's graph."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.side_info import PAIRS_NAME_ROWS


@dataclass(frozen=True)
class Relations:
    """Validated relations: soft rows (i, j, J = 2W), hard links and hard do-not-links."""

    soft_i: IntArray
    soft_j: IntArray
    soft_J: FloatArray
    link_i: IntArray
    link_j: IntArray
    dnl_i: IntArray
    dnl_j: IntArray


def _pair(pairs: IntArray, row: int) -> str:
    return f"({int(pairs[row, 0])}, {int(pairs[row, 1])})"


def check_relations(pairs: ArrayLike | None, weights: ArrayLike | None, n: int) -> Relations:
    """Validate ``pairs`` (m, 2) and ``weights`` (m,); every error names the offending pair."""
    if pairs is None and weights is None:
        empty = np.empty(0, dtype=np.int64)
        return Relations(empty, empty, np.empty(0), empty, empty, empty, empty)
    if pairs is None or weights is None:
        raise ValueError("pairs and weights must be given together (weights > 0 link, < 0 not)")
    p = np.asarray(pairs)
    if p.size == 0:
        p = p.reshape(0, 2)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"pairs must be an (m, 2) array of sample indices, got shape {p.shape}")
    if p.dtype.kind not in "iu" and (
        p.dtype.kind != "f" or not np.all(np.isfinite(p) & (p == np.round(p)))
    ):
        raise ValueError(f"pairs must hold integer sample indices, got dtype {p.dtype}")
    p = p.astype(np.int64)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != p.shape[0]:
        m = min(w.shape[0], p.shape[0])
        what = (
            f"pair {m} {_pair(p, m)} has no weight"
            if p.shape[0] > m
            else (f"weight {m} ({float(w[m])!r}) has no pair")
        )
        raise ValueError(f"pairs has {p.shape[0]} rows but weights has {w.shape[0]} values; {what}")
    for message, bad in (
        (f"is out of range for {n} samples", (p < 0).any(axis=1) | (p >= n).any(axis=1)),
        ("relates a sample to itself", p[:, 0] == p[:, 1]),
    ):
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            hint = PAIRS_NAME_ROWS if "range" in message else ""
            raise ValueError(f"pair {row} {_pair(p, row)} {message}{hint}")
    if np.isnan(w).any():
        row = int(np.flatnonzero(np.isnan(w))[0])
        raise ValueError(f"the weight of pair {row} {_pair(p, row)} is NaN")
    lo = np.minimum(p[:, 0], p[:, 1])
    hi = np.maximum(p[:, 0], p[:, 1])
    link = w == np.inf
    dnl = w == -np.inf
    _check_contradictions(p, lo, hi, link, dnl, n)
    soft = np.isfinite(w) & (w != 0.0)
    return Relations(lo[soft], hi[soft], 2.0 * w[soft], lo[link], hi[link], lo[dnl], hi[dnl])


def _check_contradictions(
    p: IntArray, lo: IntArray, hi: IntArray, link: BoolArray, dnl: BoolArray, n: int
) -> None:
    if not (link.any() and dnl.any()):
        return
    link_rows = {
        (int(a), int(b)): r for r, (a, b) in enumerate(zip(lo, hi, strict=True)) if link[r]
    }
    for r in np.flatnonzero(dnl):
        other = link_rows.get((int(lo[r]), int(hi[r])))
        if other is not None:
            raise ValueError(
                f"pair {r} {_pair(p, int(r))} is a hard do-not-link, but pair {other} "
                f"{_pair(p, other)} is a hard link on the same samples"
            )
    chunk = chunklets(n, lo[link], hi[link])
    for r in np.flatnonzero(dnl):
        if chunk[lo[r]] == chunk[hi[r]]:
            path = _hard_link_path(lo[link], hi[link], int(lo[r]), int(hi[r]))
            raise ValueError(
                f"pair {r} {_pair(p, int(r))} is a hard do-not-link, but a chain of hard links "
                f"joins its samples: {' - '.join(map(str, path))}"
            )


def chunklets(n: int, li: IntArray, lj: IntArray) -> IntArray:
    """Connected components of the hard-link graph (the chunklets), numbered 0..n_super-1."""
    if li.shape[0] == 0:
        return np.arange(n, dtype=np.int64)
    graph = coo_matrix((np.ones(li.shape[0]), (li, lj)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


def _hard_link_path(li: IntArray, lj: IntArray, start: int, goal: int) -> list[int]:
    adjacency: dict[int, list[int]] = {}
    for a, b in zip(li.tolist(), lj.tolist(), strict=True):
        adjacency.setdefault(a, []).append(b)
        adjacency.setdefault(b, []).append(a)
    previous = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            break
        for nxt in adjacency.get(node, []):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    path = [goal]
    while path[-1] != start:
        path.append(previous[path[-1]])
    return path[::-1]


def check_labels(
    labels: ArrayLike | None,
    n: int,
    n_components: int,
    rel: Relations,
    *,
    as_int64: bool = True,
) -> IntArray:
    """Validate ``labels`` (n,) (-1 = unlabeled, else a component) against the hard relations.

    Returns the labels as int64 (all -1 when None); without ``as_int64``, integer labels as
    they were given (no copy: 160 MB at 20M rows for a data-parallel fit). Errors name the
    samples: a label outside 0..M-1, two labels joined by hard links, a hard do-not-link between
    two samples of one label. Only the hard-linked samples are looked at beyond the range check,
    so the work and memory are those of the links, not of n.
    """
    if labels is None:
        return np.full(n, -1, dtype=np.int64)
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must have one entry per sample ({n},), got shape {y.shape}")
    if y.dtype.kind not in "iu" and (
        y.dtype.kind != "f" or not np.all(np.isfinite(y) & (y == np.round(y)))
    ):
        raise ValueError(f"labels must be integers (-1 = unlabeled), got dtype {y.dtype}")
    if y.dtype.kind == "f":
        y = y.astype(np.int64)
    if n and (int(y.min()) < -1 or int(y.max()) >= n_components):
        i = int(np.flatnonzero((y < -1) | (y >= n_components))[0])
        raise ValueError(
            f"sample {i} has label {int(y[i])}; labels must be -1 (unlabeled) or a component "
            f"0..{n_components - 1} (n_components={n_components})"
        )
    _check_linked_labels(y, rel)
    return y.astype(np.int64) if as_int64 else y


def _check_linked_labels(y: IntArray, rel: Relations) -> None:
    """Two labels joined by hard links, or a hard do-not-link inside one label: ValueError
    naming the first (samples in ascending order, as a scan of every sample would meet them)."""
    nodes = np.unique(np.concatenate([rel.link_i, rel.link_j])).astype(np.int64)
    component = np.empty(0, dtype=np.int64)
    if nodes.shape[0]:
        a, b = np.searchsorted(nodes, rel.link_i), np.searchsorted(nodes, rel.link_j)
        graph = coo_matrix((np.ones(a.shape[0]), (a, b)), shape=(nodes.shape[0],) * 2)
        component = connected_components(graph, directed=False)[1].astype(np.int64)
    labeled = np.flatnonzero(y[nodes] >= 0)  # positions in nodes, ascending samples
    first: dict[int, int] = {}
    for position in labeled.tolist():
        i = int(nodes[position])
        j = first.setdefault(int(component[position]), i)
        if y[j] != y[i]:
            path = _hard_link_path(rel.link_i, rel.link_j, j, i)
            raise ValueError(
                f"samples {j} and {i} have labels {int(y[j])} and {int(y[i])}, but a chain of "
                f"hard links joins them: {' - '.join(map(str, path))}"
            )
    if rel.dnl_i.shape[0] == 0:
        return
    component_label = np.full(int(component.max(initial=-1)) + 1, -1, dtype=np.int64)
    component_label[component[labeled]] = y[nodes[labeled]]

    def label_of(samples: IntArray) -> IntArray:
        """A sample's label, or its hard-link component's."""
        found = y[samples].astype(np.int64)
        at = np.minimum(np.searchsorted(nodes, samples), max(nodes.shape[0] - 1, 0))
        linked = nodes.shape[0] > 0
        if linked:
            inside = nodes[at] == samples
            found[inside] = component_label[component[at[inside]]]
        return found

    li, lj = label_of(rel.dnl_i), label_of(rel.dnl_j)
    clash = np.flatnonzero((li >= 0) & (li == lj))
    if clash.shape[0]:
        r = int(clash[0])
        raise ValueError(
            f"({int(rel.dnl_i[r])}, {int(rel.dnl_j[r])}) is a hard do-not-link, but both "
            f"samples (or samples hard-linked to them) have label {int(li[r])}"
        )
