"""PPC never refuses feasible hard do-not-links when its backtracking search runs out of budget:
DSATUR (app/engine/ppc/colouring.py) labels the component instead (issue 18)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.engine import PPC
from app.engine.ppc import fit as ppc_fit
from app.engine.ppc.colouring import dsatur


def _csr(n: int, edges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    nbrs: list[list[int]] = [[] for _ in range(n)]
    for i, j in edges:
        nbrs[i].append(j)
        nbrs[j].append(i)
    ptr = np.cumsum([0] + [len(v) for v in nbrs]).astype(np.int64)
    return ptr, np.asarray([j for v in nbrs for j in v], dtype=np.int64)


def _colourable(n: int, m: int, edges: list[tuple[int, int]]) -> bool:
    return any(all(z[i] != z[j] for i, j in edges) for z in itertools.product(range(m), repeat=n))


@pytest.mark.parametrize("seed", range(8))
def test_dsatur_colours_small_graphs_that_brute_force_says_are_colourable(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 7, 3
    edges = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.45]
    ptr, idx = _csr(n, edges)
    a = np.zeros((n, m))  # every node prefers label 0: the greedy choice must still be valid
    a[:, 0] = 1.0
    z = np.full(n, -1, dtype=np.int64)
    ok, order = dsatur(a, np.arange(n), ptr, idx, np.ones(idx.shape[0], dtype=bool), z)
    assert sorted(order.tolist()) == list(range(n))
    # on these fixed graphs DSATUR succeeds exactly when a labelling exists (brute force)
    assert ok == _colourable(n, m, edges)
    if ok:
        assert all(z[i] != z[j] for i, j in edges) and (z >= 0).all()


def test_dsatur_is_exact_on_an_odd_cycle() -> None:
    edges = [(i, (i + 1) % 5) for i in range(5)]
    ptr, idx = _csr(5, edges)
    z = np.full(5, -1, dtype=np.int64)
    ok, _ = dsatur(np.zeros((5, 3)), np.arange(5), ptr, idx, np.ones(10, dtype=bool), z)
    assert ok and all(z[i] != z[j] for i, j in edges)


def test_ppc_labels_feasible_do_not_links_when_the_search_budget_is_exhausted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ppc_fit, "SEARCH_BUDGET", 0)  # every backtrack exhausts it
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 30)
    X = rng.normal(size=(90, 2)) + np.array([[0, 0], [5, 0], [0, 5]])[y]
    pairs = np.array([(i, j) for i, j in rng.choice(90, (400, 2)) if i != j and y[i] != y[j]])
    model = PPC(3, e_step="gibbs", random_state=0, max_iter=5, covariance="full")
    model.fit(X, pairs=pairs, weights=np.full(len(pairs), -np.inf))
    labels = model.labels_
    assert np.all(labels[pairs[:, 0]] != labels[pairs[:, 1]])
