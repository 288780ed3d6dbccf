"""Oracles for LSMI (spec smic.md Sec. 3, 5.2 #1, #2, #10, #11, #14)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from app.engine.smic.lsmi import (
    DEFAULT_DELTAS,
    DEFAULT_GAMMAS,
    basis,
    lsmi_cv,
    lsmi_fixed,
    make_design,
)
from benchmarks.toy_data import make_toy

IntArray = NDArray[np.intp]


def _blobs(seed: int = 0) -> tuple[NDArray[np.float64], IntArray]:
    X, y = make_toy("four_blobs", 200, seed)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _joint_theta(L: NDArray[np.float64], y: IntArray, cy: IntArray, delta: float) -> NDArray:
    """The original (joint) LSMI system over all centres, built from eq. 12 pair by pair."""
    n = L.shape[0]
    same = (cy[:, None] == cy[None, :]).astype(float)
    counts = np.array([np.count_nonzero(y == label) for label in cy], dtype=float)
    H = (L.T @ L) * same * counts[None, :] / n**2
    h = (L * (y[:, None] == cy[None, :])).sum(axis=0) / n
    return np.linalg.solve(H + delta * np.eye(L.shape[1]), h)


def _eq14(L: NDArray[np.float64], y: IntArray, cy: IntArray, theta: NDArray) -> float:
    """LSMI of eq. 14 from all n^2 (x_i, y_j) pairs."""
    n = L.shape[0]
    r = np.stack([L @ (theta * (cy == label)) for label in y], axis=1)  # r[i, j] = r(x_i, y_j)
    return float(-(r**2).sum() / (2 * n**2) + np.trace(r) / n - 0.5)


@pytest.mark.parametrize("delta", [1e-3, 0.1, 3.0])
def test_classwise_lsmi_equals_joint_lsmi_and_eq14(delta: float) -> None:
    X, _ = _blobs()
    X, y = X[:80], np.random.RandomState(1).randint(0, 3, 80).astype(np.intp)
    design = make_design(X, 30, 5, np.random.RandomState(0))
    L = basis(design, 0.7)
    cy = y[design.centres]
    value, theta = lsmi_fixed(L, y, cy, delta)
    np.testing.assert_allclose(theta, _joint_theta(L, y, cy, delta), rtol=1e-9, atol=1e-12)
    assert value == pytest.approx(_eq14(L, y, cy, theta), abs=1e-12)


def test_true_labels_of_separated_blobs_approach_the_smi_bound() -> None:
    X, y = _blobs()
    design = make_design(X, 200, 5, np.random.RandomState(0))
    result = lsmi_cv(design, y, DEFAULT_GAMMAS, DEFAULT_DELTAS)
    c = 4
    # Deterministic labels attain the bound (c - 1) / 2; prototype value 1.491.
    assert 1.4 <= result.value <= (c - 1) / 2 + 0.01


def test_random_labels_give_lsmi_near_zero() -> None:
    X, y = _blobs()
    design = make_design(X, 200, 5, np.random.RandomState(0))
    shuffled = np.random.RandomState(3).permutation(y)
    assert abs(lsmi_cv(design, shuffled, DEFAULT_GAMMAS, DEFAULT_DELTAS).value) < 0.05


def test_single_cluster_gives_lsmi_zero() -> None:
    X, _ = _blobs()
    design = make_design(X, 200, 5, np.random.RandomState(0))
    one = np.zeros(X.shape[0], dtype=np.intp)
    assert abs(lsmi_cv(design, one, DEFAULT_GAMMAS, DEFAULT_DELTAS).value) < 1e-3


def test_huge_ridge_drives_lsmi_to_minus_half() -> None:
    X, y = _blobs()
    design = make_design(X, 50, 5, np.random.RandomState(0))
    value, _ = lsmi_fixed(basis(design, 1.0), y, y[design.centres], 1e9)
    assert value == pytest.approx(-0.5, abs=1e-8)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(5, 40),
    c=st.integers(1, 4),
    gamma=st.sampled_from(list(DEFAULT_GAMMAS)),
    delta=st.sampled_from(list(DEFAULT_DELTAS)),
)
def test_lsmi_is_at_least_minus_half(seed: int, n: int, c: int, gamma: float, delta: float) -> None:
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 2))
    y = rng.randint(0, c, n).astype(np.intp)
    design = make_design(X, 15, 5, rng)
    L = basis(design, gamma)
    value, _ = lsmi_fixed(L, y, y[design.centres], delta)
    assert value >= -0.5 - 1e-9


def test_cv_picks_the_first_minimum_and_refits_with_it() -> None:
    X, y = _blobs(2)
    design = make_design(X, 100, 5, np.random.RandomState(0))
    result = lsmi_cv(design, y, DEFAULT_GAMMAS, DEFAULT_DELTAS)
    g, d = np.unravel_index(np.argmin(result.cv), result.cv.shape)
    assert (result.gamma, result.delta) == (DEFAULT_GAMMAS[g], DEFAULT_DELTAS[d])
    refit, _ = lsmi_fixed(basis(design, result.gamma), y, y[design.centres], result.delta)
    assert result.value == refit


@pytest.mark.parametrize(("g", "d"), [(3, 2), (0, 0), (8, 8), (5, 4)])
@pytest.mark.parametrize("one_fold_class", [False, True])
def test_cv_hold_out_error_matches_direct_fold_by_fold_fit(
    g: int, d: int, one_fold_class: bool
) -> None:
    X, y = _blobs(4)
    X, y = X[:90], y[:90].copy()
    design = make_design(X, 40, 3, np.random.RandomState(2))
    if one_fold_class:  # a class whose members all sit in fold 0: no training member there
        y[design.folds == 0] = np.where(np.arange(np.sum(design.folds == 0)) % 2, 4, 0)
        y[(design.folds != 0) & (y == 4)] = 1
    gamma, delta = DEFAULT_GAMMAS[g], DEFAULT_DELTAS[d]
    result = lsmi_cv(design, y, np.array([gamma]), np.array([delta]))
    L = basis(design, gamma)
    cy = y[design.centres]
    assert (4 in cy) == one_fold_class
    expected = 0.0
    for m in range(design.n_folds):
        tr, te = design.folds != m, design.folds == m
        _, theta = lsmi_fixed(L[tr], y[tr], cy, delta)
        # Hold-out error = eq. 14 on the fold without the constant, i.e. -(LSMI_te + 1/2).
        expected += -(_eq14(L[te], y[te], cy, theta) + 0.5) / design.n_folds
    assert result.cv[0, 0] == pytest.approx(expected, rel=1e-9, abs=1e-12)
