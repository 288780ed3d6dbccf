"""C4s spec oracles (specs/c4s.md Sec. 2.3, 2.7, 4.1-4.4): moment merge/split, group moves, the
exact validity check on the worked cases and against brute force, chunklets and contradictions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from app.engine.c4s.constraints import aggregate, check_pairs, merge_clusters
from app.engine.c4s.validity import CannotLinkGraph, move_is_valid, new_graph
from app.engine.core.cec_state import new_state, recompute_state, total_energy
from app.engine.core.families import FULL
from app.engine.core.hartigan import extract_group, group_move_deltas, insert_group
from app.engine.core.moments import add_group, remove_group

HALF_LOG_2PIE = 0.5 * math.log(2 * math.pi * math.e)


def _moments(P: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    m = P.mean(axis=0)
    return float(P.shape[0]), m, (P - m).T @ (P - m) / P.shape[0]


def test_union_and_difference_formulas_match_direct_computation() -> None:
    """Observation 1 with the q_V fix: N = 3, 200 points, seed 0, to 1e-10."""
    rng = np.random.default_rng(0)
    U = rng.normal(size=(120, 3)) @ rng.normal(size=(3, 3))
    V = rng.normal(size=(80, 3)) + 2.0
    wu, mu, su = _moments(U)
    wv, mv, sv = _moments(V)
    mean, cov = mu.copy(), su.copy()
    assert add_group(mean, cov, wu, mv, sv, wv) == 200.0
    _, m_all, s_all = _moments(np.vstack([U, V]))
    np.testing.assert_allclose(mean, m_all, atol=1e-10)
    np.testing.assert_allclose(cov, s_all, atol=1e-10)
    # the paper's p_U / p_V form of the union
    pu, pv = wu / 200, wv / 200
    union = pu * su + pv * sv + pu * pv * np.outer(mu - mv, mu - mv)
    np.testing.assert_allclose(union, s_all, atol=1e-10)
    # difference U cup V minus V gives U back; q_U = p(U)/(p(U)-p(V)), q_V likewise
    assert remove_group(mean, cov, 200.0, mv, sv, wv) == wu
    np.testing.assert_allclose(mean, mu, atol=1e-10)
    np.testing.assert_allclose(cov, su, atol=1e-10)
    qu, qv = 200 / wu, wv / wu
    diff = qu * s_all - qv * sv - qu * qv * np.outer(m_all - mv, m_all - mv)
    np.testing.assert_allclose(diff, su, atol=1e-10)


def test_closed_form_cost_is_the_mean_negative_log_likelihood() -> None:
    """-(1/|Y|) sum ln N(x; m, S) = (N/2) ln(2 pi e) + 1/2 ln det S (Sec. 4.1)."""
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(3)
    Y = rng.normal(size=(50, 3)) @ rng.normal(size=(3, 3))
    _, m, S = _moments(Y)
    nll = -multivariate_normal(m, S).logpdf(Y).mean()
    assert nll == pytest.approx(3 * HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(S)[1], rel=1e-12)


def test_one_dimensional_cec_cost_oracles() -> None:
    """X = {0, 1, 2, 10, 11, 12}: one cluster 3.0415350998, {0,1,2}|{10,11,12} 1.9093531597."""
    X = np.array([[0.0], [1], [2], [10], [11], [12]])
    for assign, expected in (
        ([0] * 6, 3.0415350997974597),
        ([0, 0, 0, 1, 1, 1], 1.9093531597105358),
    ):
        labels = np.array(assign, dtype=np.int64)
        state = new_state(2, 1, 0)
        state.alive[:] = np.bincount(labels, minlength=2) > 0
        recompute_state(X, labels, np.full(6, -1, dtype=np.int64), state, FULL, 6.0, 0.0)
        assert total_energy(state) == pytest.approx(expected, abs=1e-12)


def _state_of(X: np.ndarray, labels: np.ndarray, k: int):  # type: ignore[no-untyped-def]
    state = new_state(k, X.shape[1], 0)
    state.alive[:] = np.bincount(labels, minlength=k) > 0
    recompute_state(
        X, labels, np.full(X.shape[0], -1, dtype=np.int64), state, FULL, float(X.shape[0]), 0.0
    )
    return state


def test_group_move_deltas_match_energies_from_scratch() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 2)) + np.repeat([[0, 0], [4, 0], [0, 4]], 30, axis=0)
    labels = np.repeat(np.arange(3), 30).astype(np.int64)
    block = np.arange(10, 22)  # a chunklet inside cluster 0 (rows 10-21, 0-29 are cluster 0)
    w, gm, gs = _moments(X[block])
    state = _state_of(X, labels, 3)
    base = total_energy(state)
    delta = np.empty(3)
    group_move_deltas(w, gm, gs, 0, state, FULL, 90.0, 0.0, delta, np.empty((7, 2)))
    for j in range(3):
        moved = labels.copy()
        moved[block] = j
        assert delta[j] == pytest.approx(total_energy(_state_of(X, moved, 3)) - base, abs=1e-12)
    extract_group(w, gm, gs, 0, state, FULL, 90.0, 0.0)
    insert_group(w, gm, gs, 2, state, FULL, 90.0, 0.0)
    moved = labels.copy()
    moved[block] = 2
    fresh = _state_of(X, moved, 3)
    np.testing.assert_allclose(state.cov, fresh.cov, atol=1e-12)
    assert total_energy(state) == pytest.approx(total_energy(fresh), abs=1e-12)


# --- validity: items are (initial chunklet) rows; lab = item -> cluster ----------------------


def _graph(item_chunk: list[int], neg: list[tuple[int, int]], k: int) -> CannotLinkGraph:
    n_chunk = max(item_chunk) + 1
    pairs = sorted({(a, b) for a, b in neg} | {(b, a) for a, b in neg})
    ptr = np.zeros(n_chunk + 1, dtype=np.int64)
    for a, _ in pairs:
        ptr[a + 1] += 1
    ptr = np.cumsum(ptr)
    idx = np.array([b for _, b in pairs], dtype=np.int64)
    return new_graph(np.array(item_chunk, dtype=np.int64), n_chunk, ptr, idx, k)


def _brute_force_valid(lab: np.ndarray, g: CannotLinkGraph, k: int) -> bool:
    """Theorem 2 on the merged partition: merge clusters sharing a chunklet, check every pair."""
    groups = merge_clusters(lab, g.item_chunk, k)
    chunk_groups: dict[int, set[int]] = {}
    for c, grp in zip(g.item_chunk.tolist(), groups.tolist(), strict=True):
        chunk_groups.setdefault(c, set()).add(grp)
    for c in range(g.neg_ptr.shape[0] - 1):
        for e in range(g.neg_ptr[c], g.neg_ptr[c + 1]):
            if chunk_groups.get(c, set()) & chunk_groups.get(int(g.neg_idx[e]), set()):
                return False
    return True


def _exact(t: int, b: int, lab: list[int], g: CannotLinkGraph) -> bool:
    return bool(move_is_valid(t, b, np.array(lab, dtype=np.int64), g))


def test_worked_case_t_c1() -> None:
    """Items F1a F1b | F2a F2b | F3a | F4a F4b | Fx | Fy (chunklets 0, 1, 2, 3, 4, 5); C2 !~ C3.
    P1 = {F1a}, P2 = {F1b, F2a}, P3 = {F2b}, P4 = {F4a}, P5 = {F4b, F3a}, P6 = {Fx}, P7 = {Fy}."""
    chunks = [0, 0, 1, 1, 2, 3, 3, 4, 5]
    lab = [0, 1, 1, 2, 4, 3, 4, 5, 6]
    g = _graph(chunks, [(1, 2)], 7)
    assert _brute_force_valid(np.array(lab), g, 7)
    groups = merge_clusters(np.array(lab), g.item_chunk, 7)
    assert len(set(groups.tolist())) == 4  # C1 u C2, C3 u C4, {x}, {y}
    expected = {(4, 2): False, (6, 2): True, (5, 5): True, (0, 1): True, (7, 4): True}
    for (t, b), answer in expected.items():  # F3a->P3, F4b->P3, F4a->P6, F1a->P2, Fx->P5
        moved = lab.copy()
        moved[t] = b
        assert _exact(t, b, lab, g) is answer
        assert _brute_force_valid(np.array(moved), g, 7) is answer


def test_worked_case_t_v1_the_gap_of_theorem_3() -> None:
    """F1 = C1, F2 = C2 unsplit, a1 !~ b1: moving F2 into F1's cluster must be rejected."""
    g = _graph([0, 1], [(0, 1)], 2)
    assert not _exact(1, 0, [0, 1], g)
    assert not _brute_force_valid(np.array([0, 0]), g, 2)


def test_worked_case_t_v2_theorem_3_is_conservative() -> None:
    """F4a, F4b in C4; F3 in C3; F5 in C5; C5 !~ C3. P4 = {F4a, F3}, P5 = {F4b}, P7 = {F5}.
    Moving F4a to P7 is valid (groups {P5, P7} and {P4}); the exact check accepts it."""
    g = _graph([0, 0, 1, 2], [(2, 1)], 3)  # items F4a F4b F3 F5; chunklets C4=0 C3=1 C5=2
    lab = [0, 1, 0, 2]
    assert _exact(0, 2, lab, g)
    assert _brute_force_valid(np.array([2, 1, 0, 2]), g, 3)


@pytest.mark.parametrize("seed", range(6))
def test_exact_check_equals_brute_force_on_random_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_chunk, k = 6, 8
    chunks = sorted(rng.integers(0, n_chunk, size=10).tolist())
    chunks = [int(c) for c in np.unique(chunks, return_inverse=True)[1]]
    n_chunk = max(chunks) + 1
    neg = [(a, b) for a, b in itertools.combinations(range(n_chunk), 2) if rng.random() < 0.25]
    g = _graph(chunks, neg, k)
    checked = 0
    for _ in range(3000):
        if checked == 100:
            break
        lab = rng.integers(0, k, size=len(chunks))
        if not _brute_force_valid(lab, g, k):
            continue
        t, b = int(rng.integers(len(chunks))), int(rng.integers(k))
        moved = lab.copy()
        moved[t] = b
        assert _exact(t, b, lab.tolist(), g) is _brute_force_valid(moved, g, k)
        checked += 1
    assert checked > 20


def test_chunklets_are_the_transitive_closure() -> None:
    ml = check_pairs("must_link", [[0, 1], [1, 2], [4, 5], [2, 2]], 7)
    cl = check_pairs("cannot_link", [[0, 4], [5, 0], [3, 6]], 7)
    ch = aggregate(7, ml, cl)
    assert ch.n_chunklets == 4
    assert len({ch.chunk[0], ch.chunk[1], ch.chunk[2]}) == 1
    assert ch.chunk[4] == ch.chunk[5] != ch.chunk[0]
    a = ch.chunk[0]
    assert ch.neg_idx[ch.neg_ptr[a] : ch.neg_ptr[a + 1]].tolist() == [ch.chunk[4]]  # duplicates


def test_contradiction_names_the_must_link_chain() -> None:
    ml = check_pairs("must_link", [[3, 7], [7, 9], [1, 2]], 10)
    cl = check_pairs("cannot_link", [[0, 1], [9, 3]], 10)
    with pytest.raises(ValueError, match=r"cannot_link row 1 .* 9 and 3.* chain 9 - 7 - 3"):
        aggregate(10, ml, cl)
    with pytest.raises(ValueError, match="pairs point 4 with itself"):
        aggregate(10, ml, check_pairs("cannot_link", [[4, 4]], 10))
