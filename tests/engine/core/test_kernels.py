"""Kernels of the CEC core against numpy/scipy from scratch (explicit rtol, fixed seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.core.cost import gaussian_cost
from app.engine.core.families import (
    DIAGONAL,
    FULL,
    KERNEL_FAMILIES,
    SPHERICAL,
    family_entropy,
    join_log_factor_bound,
    log_factor,
    spread_bound,
)
from app.engine.core.linalg import (
    cholesky_lower,
    cholesky_rank_one,
    half_logdet,
    invert_lower,
    mahalanobis_sq,
)
from app.engine.core.moments import (
    add_group,
    add_point,
    moments_from_labels,
    remove_group,
    remove_point,
)


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return a @ a.T + 0.5 * np.eye(d)


def _moments(points: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    mean = points.mean(axis=0)
    centered = points - mean
    return float(points.shape[0]), mean, centered.T @ centered / points.shape[0]


@pytest.mark.parametrize("d", [1, 3, 6])
def test_cholesky_matches_numpy(d: int) -> None:
    a = _spd(np.random.default_rng(d), d)
    out = np.full((d, d), np.nan)
    assert cholesky_lower(a, out)
    np.testing.assert_allclose(out, np.linalg.cholesky(a), rtol=1e-12, atol=1e-14)
    assert half_logdet(out) == pytest.approx(0.5 * np.linalg.slogdet(a)[1], rel=1e-12)


def test_cholesky_rejects_singular_matrix() -> None:
    v = np.array([1.0, 2.0, 3.0])
    assert not cholesky_lower(np.outer(v, v), np.zeros((3, 3)))
    assert not cholesky_lower(-np.eye(2), np.zeros((2, 2)))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cholesky_rank_one_update_and_downdate(sign: float) -> None:
    rng = np.random.default_rng(7)
    a = _spd(rng, 5)
    v = 0.3 * rng.normal(size=5)
    chol = np.linalg.cholesky(a)
    assert cholesky_rank_one(chol, v, sign, np.empty(5))
    np.testing.assert_allclose(chol, np.linalg.cholesky(a + sign * np.outer(v, v)), rtol=1e-10)


def test_cholesky_downdate_to_singular_fails() -> None:
    v = np.array([1.0, 0.0])
    chol = np.eye(2)
    assert not cholesky_rank_one(chol, v, -1.0, np.empty(2))


def test_inverse_factor_and_mahalanobis_match_numpy() -> None:
    rng = np.random.default_rng(3)
    a = _spd(rng, 4)
    u = rng.normal(size=4)
    chol_inv = np.full((4, 4), np.nan)
    invert_lower(np.linalg.cholesky(a), chol_inv)
    np.testing.assert_allclose(chol_inv, np.linalg.inv(np.linalg.cholesky(a)), atol=1e-12)
    expected = u @ np.linalg.solve(a, u)
    assert mahalanobis_sq(chol_inv[None], 0, u) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), d=st.integers(1, 4))
def test_point_updates_are_exact(seed: int, n: int, d: int) -> None:
    """Incremental add/remove equals the moments recomputed from scratch."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(n, d))
    size, mean, cov = _moments(points[:-1])
    size = add_point(mean, cov, size, points[-1], 1.0)
    _, mean_all, cov_all = _moments(points)
    assert size == n
    np.testing.assert_allclose(mean, mean_all, atol=1e-12)
    np.testing.assert_allclose(cov, cov_all, atol=1e-12)
    size = remove_point(mean, cov, size, points[0], 1.0)
    _, mean_rest, cov_rest = _moments(points[1:])
    assert size == n - 1
    np.testing.assert_allclose(mean, mean_rest, atol=1e-12)
    np.testing.assert_allclose(cov, cov_rest, atol=1e-11)


def test_weighted_point_equals_repeated_point() -> None:
    rng = np.random.default_rng(11)
    points = rng.normal(size=(6, 2))
    x = np.array([0.7, -1.2])
    size, mean, cov = _moments(points)
    size = add_point(mean, cov, size, x, 3.0)
    expected = _moments(np.vstack([points, x, x, x]))
    assert size == 9.0
    np.testing.assert_allclose(mean, expected[1], atol=1e-12)
    np.testing.assert_allclose(cov, expected[2], atol=1e-12)
    size = remove_point(mean, cov, size, x, 3.0)
    np.testing.assert_allclose(cov, _moments(points)[2], atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 8), m=st.integers(1, 8))
def test_group_union_and_difference_are_exact(seed: int, n: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 3))
    group = rng.normal(size=(m, 3)) + 2.0
    size, mean, cov = _moments(base)
    g_size, g_mean, g_cov = _moments(group)
    size = add_group(mean, cov, size, g_mean, g_cov, g_size)
    _, mean_u, cov_u = _moments(np.vstack([base, group]))
    np.testing.assert_allclose(mean, mean_u, atol=1e-12)
    np.testing.assert_allclose(cov, cov_u, atol=1e-12)
    size = remove_group(mean, cov, size, g_mean, g_cov, g_size)
    assert size == n
    np.testing.assert_allclose(mean, base.mean(axis=0), atol=1e-11)
    np.testing.assert_allclose(cov, _moments(base)[2], atol=1e-11)


def test_moments_from_labels() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 3))
    assign = rng.integers(0, 3, size=20).astype(np.int64)
    size, mean, cov = np.zeros(4), np.zeros((4, 3)), np.zeros((4, 3, 3))
    moments_from_labels(X, assign, size, mean, cov)
    for c in range(3):
        s, m, S = _moments(X[assign == c])
        assert size[c] == s
        np.testing.assert_allclose(mean[c], m, atol=1e-12)
        np.testing.assert_allclose(cov[c], S, atol=1e-12)
    assert size[3] == 0.0


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
def test_family_entropy_matches_reference(covariance: str) -> None:
    points = np.random.default_rng(2).normal(size=(15, 3)) * [1.0, 2.0, 0.5]
    _, _, cov = _moments(points)
    got = family_entropy(KERNEL_FAMILIES[covariance], cov, np.zeros((3, 3)), np.zeros((3, 3)))
    assert got == pytest.approx(gaussian_cost(points, covariance), rel=1e-12)


def test_family_entropy_formulas() -> None:
    """Spec Sec. 2.7 closed forms on a diagonal covariance."""
    cov = np.diag([1.0, 4.0])
    const = math.log(2 * math.pi * math.e)
    chol, inv = np.zeros((2, 2)), np.zeros((2, 2))
    assert family_entropy(FULL, cov, chol, inv) == pytest.approx(const + 0.5 * math.log(4.0))
    assert family_entropy(DIAGONAL, cov, chol, inv) == pytest.approx(const + 0.5 * math.log(4.0))
    assert family_entropy(SPHERICAL, cov, chol, inv) == pytest.approx(const + math.log(2.5))


def test_family_entropy_singular_is_inf() -> None:
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])
    chol, inv = np.zeros((2, 2)), np.zeros((2, 2))
    assert family_entropy(FULL, cov, chol, inv) == math.inf
    assert family_entropy(DIAGONAL, np.diag([1.0, 0.0]), chol, inv) == math.inf
    assert family_entropy(SPHERICAL, np.zeros((2, 2)), chol, inv) == math.inf
    assert gaussian_cost(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])) == math.inf


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_log_factor_gives_updated_entropy(covariance: str, sign: float) -> None:
    """H + (d ln rho + F)/2 equals the family cost of the updated set (determinant lemma)."""
    family = KERNEL_FAMILIES[covariance]
    rng = np.random.default_rng(4)
    points = rng.normal(size=(9, 3)) * [1.0, 3.0, 0.3]
    x = points[0] if sign < 0 else rng.normal(size=3)
    size, mean, cov = _moments(points)
    chol, inv = np.zeros((3, 3)), np.zeros((3, 3))
    entropy = family_entropy(family, cov, chol, inv)
    new_size = size + sign
    f = log_factor(family, x - mean, cov[None], inv[None], 0, 1.0 / new_size, sign)
    got = entropy + 0.5 * (3 * math.log(size / new_size) + f)
    updated = points[1:] if sign < 0 else np.vstack([points, x])
    assert got == pytest.approx(gaussian_cost(updated, covariance), rel=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
def test_join_bound_is_a_lower_bound(covariance: str) -> None:
    family = KERNEL_FAMILIES[covariance]
    rng = np.random.default_rng(8)
    for _ in range(50):
        points = rng.normal(size=(8, 3)) @ rng.normal(size=(3, 3))
        size, _, cov = _moments(points)
        chol, inv = np.zeros((3, 3)), np.zeros((3, 3))
        family_entropy(family, cov, chol, inv)
        u = 3 * rng.normal(size=3)
        c = 1.0 / (size + 1)
        exact = log_factor(family, u, cov[None], inv[None], 0, c, 1.0)
        bound = join_log_factor_bound(family, u, cov[None], 0, spread_bound(cov), c)
        assert bound <= exact + 1e-15
        # a log factor of a join is >= 0; unit's F also carries the point-independent change
        # (it can be negative) and its "bound" is the exact value, O(d) already
        assert bound >= 0.0 if covariance != "unit" else bound == exact
    assert spread_bound(cov) >= np.linalg.eigvalsh(cov).max()


def test_log_factor_flags_singular_downdate() -> None:
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    _, mean, cov = _moments(points)
    chol, inv = np.zeros((2, 2)), np.zeros((2, 2))
    family_entropy(FULL, cov, chol, inv)
    # removing (5,5) leaves 3 points spanning the plane: fine
    assert math.isfinite(log_factor(FULL, points[3] - mean, cov[None], inv[None], 0, 1 / 3, -1.0))
    collinear = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 1.0]])
    _, mean, cov = _moments(collinear)
    family_entropy(FULL, cov, chol, inv)
    u = collinear[3] - mean
    assert log_factor(FULL, u, cov[None], inv[None], 0, 1 / 3, -1.0) == math.inf
