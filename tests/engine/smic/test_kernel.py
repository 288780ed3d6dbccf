"""Oracles for SMIC's sparse local-scaling kernel (spec smic.md Sec. 1.4, 5.2 #7, A1, A2, A12)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

from app.engine.smic.constraints import compile_constraints, edit_kernel
from app.engine.smic.kernel import (
    PROBE_MIN_POINTS,
    local_scaling_kernel,
    nearest_neighbors,
    neighbour_algorithm,
    normalize_symmetric,
)


def _points(n: int = 60, d: int = 3, seed: int = 0) -> NDArray[np.float64]:
    return np.random.RandomState(seed).standard_normal((n, d))


def test_neighbours_match_brute_force_sorted_by_distance() -> None:
    X = _points()
    idx, dist = nearest_neighbors(X, 10)
    full = cdist(X, X)
    np.fill_diagonal(full, np.inf)
    expected = np.argsort(full, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(dist, np.take_along_axis(full, expected, axis=1), rtol=1e-12)


def test_exact_duplicates_have_distance_exactly_zero() -> None:
    X = _points(40, 64)
    X[7] = X[3]
    _, dist = nearest_neighbors(X, 3)
    assert dist[7, 0] == 0.0 and dist[3, 0] == 0.0
    assert np.all(np.delete(dist[:, 0], [3, 7]) > 0)


@pytest.mark.parametrize("t", [1, 3, 7])
def test_kernel_matches_eq7_by_brute_force(t: int) -> None:
    X = _points()
    idx, dist = nearest_neighbors(X, 10)
    K = local_scaling_kernel(idx, dist, t).toarray()
    full = cdist(X, X)
    sigma = np.sort(full, axis=1)[:, t]  # column 0 is the point itself
    # Without distance ties, x_j in N_t(x_i) <=> ||x_i - x_j|| <= sigma_i (spec Sec. 1.4).
    adjacent = (full <= sigma[:, None]) | (full <= sigma[None, :])
    expected = np.where(adjacent, np.exp(-(full**2) / (2 * np.outer(sigma, sigma))), 0.0)
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("t", [1, 4, 10])
def test_kernel_structure(t: int) -> None:
    X = _points(80, 2, seed=3)
    idx, dist = nearest_neighbors(X, 10)
    K = local_scaling_kernel(idx, dist, t)
    dense = K.toarray()
    n = X.shape[0]
    np.testing.assert_array_equal(dense, dense.T)
    np.testing.assert_array_equal(np.diag(dense), np.ones(n))
    off = dense - np.eye(n)
    assert np.all((off == 0) | ((off > 0) & (off <= 1)))
    assert np.all((off > 0).sum(axis=1) >= t)
    assert K.nnz <= 2 * n * t + n


def test_kernel_is_not_psd_but_normalised_spectrum_is_in_unit_interval() -> None:
    X = _points(200, 2, seed=1)
    idx, dist = nearest_neighbors(X, 5)
    K = local_scaling_kernel(idx, dist, 5)
    assert np.linalg.eigvalsh(K.toarray()).min() < -0.1  # spec Sec. 2.4 [paper-fix]
    vals = np.linalg.eigvalsh(normalize_symmetric(K).toarray())
    assert vals.max() == pytest.approx(1.0, abs=1e-12)  # connected: Perron root 1
    assert vals.min() >= -1.0 - 1e-12


def test_normalize_symmetric_is_d_half_k_d_half() -> None:
    X = _points(30, 2)
    idx, dist = nearest_neighbors(X, 4)
    K = local_scaling_kernel(idx, dist, 4).toarray()
    d = K.sum(axis=1)
    expected = K / np.sqrt(np.outer(d, d))
    np.testing.assert_allclose(
        normalize_symmetric(local_scaling_kernel(idx, dist, 4)).toarray(), expected, rtol=1e-13
    )


def test_zero_scale_from_duplicates_raises_naming_the_point() -> None:
    X = _points(30, 2)
    X[5] = X[12]
    idx, dist = nearest_neighbors(X, 3)
    with pytest.raises(ValueError, match=r"point (5|12) has at least 1 exact duplicate"):
        local_scaling_kernel(idx, dist, 1)
    K = local_scaling_kernel(idx, dist, 2)  # the 2nd neighbour is a distinct point
    assert np.all(np.isfinite(K.data))


def test_kernel_edits_close_must_links_and_cut_cannot_links() -> None:
    X = _points(40, 2, seed=5)
    idx, dist = nearest_neighbors(X, 5)
    K = local_scaling_kernel(idx, dist, 5)
    dense = K.toarray()
    chunk = (0, 1, 2)  # must-links 0-1 and 1-2, so 0-2 by transitivity
    b = next(int(k) for k in idx[2] if k not in chunk)  # kNN-adjacent to 2
    i = next(k for k in range(3, 40) if k != b)
    j = next(int(k) for k in idx[i] if k not in (*chunk, b))  # kNN-adjacent to i
    assert dense[b, 2] > 0 and dense[i, j] > 0
    cons = compile_constraints(np.array([[0, 1], [1, 2]]), np.array([[b, 0], [i, j]]), 40)
    E = edit_kernel(K, cons).toarray()
    np.testing.assert_array_equal(E, E.T)
    for p, q in [(0, 1), (1, 2), (0, 2)]:
        assert E[p, q] == 1.0
    # The cannot-link (b, 0) separates b from the whole chunklet, including its neighbour 2.
    assert E[b, 0] == E[b, 1] == E[b, 2] == 0.0
    assert E[i, j] == 0.0
    changed = {(p, q) for p in chunk for q in chunk} | {(b, p) for p in chunk} | {(i, j)}
    changed |= {(q, p) for p, q in changed}
    untouched = np.ones_like(E, dtype=bool)
    for p, q in changed:
        untouched[p, q] = False
    np.testing.assert_array_equal(E[untouched], dense[untouched])


def _plane_in_8d(n: int, seed: int = 0) -> NDArray[np.float64]:
    """Points on a 2-D plane inside 8-D space: low intrinsic dimension, like an image's pixels."""
    rng = np.random.RandomState(seed)
    return rng.uniform(size=(n, 2)) @ rng.standard_normal((2, 8))


def test_search_is_brute_force_above_five_dimensions_unless_a_tree_visits_few_points() -> None:
    assert neighbour_algorithm(_points(100, 5), 10) == "kd_tree"
    assert neighbour_algorithm(_points(100, 6), 10) == "brute"  # small: no probe
    n = PROBE_MIN_POINTS
    assert neighbour_algorithm(_plane_in_8d(n), 10) == "kd_tree"
    assert neighbour_algorithm(_points(n, 10), 10) == "brute"  # full-dimensional


def test_neighbours_found_by_the_tree_are_the_exact_ones() -> None:
    X = _plane_in_8d(PROBE_MIN_POINTS, seed=1)
    assert neighbour_algorithm(X, 7) == "kd_tree"
    idx, dist = nearest_neighbors(X, 7)
    brute = NearestNeighbors(n_neighbors=7, algorithm="brute").fit(X)
    expected = brute.kneighbors(return_distance=False)
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(expected, axis=1))
    exact = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(axis=2))
    np.testing.assert_array_equal(dist, exact)
    assert np.all(np.diff(dist, axis=1) >= 0)
