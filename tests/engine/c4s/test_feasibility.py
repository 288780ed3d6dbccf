"""C4S never refuses feasible cannot-links (issue 18): the chunklet colouring against brute force
(all k-colourings of tiny graphs), the proof set of an infeasible request is infeasible and
minimal, and the constraints that refused before (drawn from the true classes) now fit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from app.engine import C4S
from app.engine.c4s.feasibility import colour_chunklets, infeasible_core


def _csr(n: int, edges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    pairs = sorted({(a, b) for a, b in edges} | {(b, a) for a, b in edges})
    ptr = np.zeros(n + 1, dtype=np.int64)
    for a, _ in pairs:
        ptr[a + 1] += 1
    return np.cumsum(ptr), np.array([b for _, b in pairs], dtype=np.int64)


def _brute_colourable(vertices: list[int], edges: list[tuple[int, int]], k: int) -> bool:
    inside = [(a, b) for a, b in edges if a in vertices and b in vertices]
    for colours in itertools.product(range(k), repeat=len(vertices)):
        of = dict(zip(vertices, colours, strict=True))
        if all(of[a] != of[b] for a, b in inside):
            return True
    return False


def _random_graph(rng: np.random.Generator) -> tuple[int, list[tuple[int, int]], int]:
    n = int(rng.integers(1, 8))
    density = rng.uniform(0.2, 0.9)
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < density]
    return n, edges, int(rng.integers(1, 4))


@pytest.mark.parametrize("seed", range(60))
def test_colouring_agrees_with_brute_force(seed: int) -> None:
    n, edges, k = _random_graph(np.random.default_rng(seed))
    ptr, idx = _csr(n, edges)
    colour = colour_chunklets(ptr, idx, k)
    assert (colour is not None) == _brute_colourable(list(range(n)), edges, k)
    if colour is not None:
        assert colour.min() >= 0 and colour.max() < k
        assert all(colour[a] != colour[b] for a, b in edges)


@pytest.mark.parametrize("seed", range(60))
def test_proof_set_is_infeasible_and_minimal(seed: int) -> None:
    n, edges, k = _random_graph(np.random.default_rng(1000 + seed))
    if _brute_colourable(list(range(n)), edges, k):
        return
    proof = infeasible_core(*_csr(n, edges), k)
    assert proof.minimal
    assert not _brute_colourable(proof.chunklets, edges, k)
    for v in proof.chunklets:
        assert _brute_colourable([u for u in proof.chunklets if u != v], edges, k)


def test_odd_cycle_is_named_when_two_groups_cannot_hold_it() -> None:
    """A 5-cycle of cannot-links has no triangle: the proof is the whole cycle, by shrinking."""
    ptr, idx = _csr(6, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 5)])
    proof = infeasible_core(ptr, idx, 2)
    assert proof.chunklets == [0, 1, 2, 3, 4] and not proof.is_clique and proof.minimal


def _brute_points(n: int, ml: np.ndarray, cl: np.ndarray, k: int) -> bool:
    for labels in itertools.product(range(k), repeat=n):
        lab = np.array(labels)
        if np.all(lab[ml[:, 0]] == lab[ml[:, 1]]) and np.all(lab[cl[:, 0]] != lab[cl[:, 1]]):
            return True
    return False


@pytest.mark.parametrize("seed", range(25))
def test_c4s_fits_exactly_the_feasible_requests(seed: int) -> None:
    """Tiny point sets: C4S fits (and satisfies every pair) iff some k-partition does."""
    rng = np.random.default_rng(seed)
    n, k = 9, int(rng.integers(2, 4))
    X = rng.normal(size=(n, 2))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = rng.choice(len(pairs), size=int(rng.integers(3, 14)), replace=False)
    kinds = rng.random(chosen.shape[0]) < 0.3
    ml = np.array(
        [pairs[c] for c, m in zip(chosen, kinds, strict=True) if m], dtype=np.int64
    ).reshape(-1, 2)
    cl = np.array(
        [pairs[c] for c, m in zip(chosen, kinds, strict=True) if not m], dtype=np.int64
    ).reshape(-1, 2)
    model = C4S(k, min_cluster_fraction=0.0, n_init=2, random_state=seed)
    try:
        labels = model.fit(X, must_link=ml, cannot_link=cl).labels_
    except ValueError as error:
        assert not _brute_points(n, ml, cl, k), str(error)
        return
    assert _brute_points(n, ml, cl, k)
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
    assert np.all(labels[cl[:, 0]] != labels[cl[:, 1]])


def test_error_names_a_clique_and_its_cannot_links() -> None:
    X = np.random.default_rng(0).normal(size=(8, 2))
    ml = np.array([[0, 1], [2, 3]])
    cl = np.array([[0, 2], [1, 4], [3, 4], [6, 7]])
    with pytest.raises(
        ValueError,
        match=r"n_clusters=2 groups: these 3 must-link groups are "
        r"pairwise cannot-linked: \{0, 1\}; \{2, 3\}; \{4\} \(cannot_link rows 0, 1, 2\)",
    ):
        C4S(2).fit(X, must_link=ml, cannot_link=cl)


def _truth_pairs(y: np.ndarray, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The issue's protocol: distinct random pairs, must-link iff same true class."""
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int]] = set()
    while len(seen) < n_pairs:
        i, j = rng.choice(y.shape[0], 2, replace=False)
        seen.add((int(min(i, j)), int(max(i, j))))
    pairs = np.array(sorted(seen))
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    return pairs[same], pairs[~same]


@pytest.mark.parametrize("loader", [load_iris, load_wine])
@pytest.mark.parametrize("seed", range(3))
def test_constraints_from_the_true_classes_are_never_refused(loader: object, seed: int) -> None:
    """These draws were refused with 'the cannot-links need more than n_clusters=3 clusters'."""
    X, y = loader(return_X_y=True)  # type: ignore[operator]
    X = StandardScaler().fit_transform(X)
    ml, cl = _truth_pairs(y, 200, 200_000 + seed)
    labels = C4S(3, n_init=2, random_state=seed).fit(X, must_link=ml, cannot_link=cl).labels_
    assert np.all(labels[cl[:, 0]] != labels[cl[:, 1]])
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
