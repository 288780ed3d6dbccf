"""The ``C3L`` estimator: eps = 1/2 is plain CEC with the product family, fitted partitions are
single-move local optima of the C3L cost, leakage <= eps per cluster, invariances, validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.base import clone

from app.engine import C3L
from app.engine.c3l.cost import leakage_quantile, side_cost
from app.engine.c3l.fit import SIDE_RIDGE
from app.engine.core.families import HALF_LOG_2PIE


def _data(seed: int, n: int = 90) -> tuple[np.ndarray, np.ndarray]:
    """Three blobs; the boundary x0 + 0.3 x1 = 1 cuts through one of them."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([
        rng.normal(size=(n // 3, 2)) * np.array([1.5, 0.7]) + np.array([1.0, 0.0]),
        rng.normal(size=(n // 3, 2)) + np.array([5.0, 3.0]),
        rng.normal(size=(n - 2 * (n // 3), 2)) + np.array([-3.0, 3.0]),
    ])  # fmt: skip
    return X, X[:, 0] + 0.3 * X[:, 1] - 1.0


def _cost(X: np.ndarray, scores: np.ndarray, labels: np.ndarray, eps: float) -> float:
    """E = sum_c p_c (-ln p_c + C_eps(scores) + H_full(x)) from scratch, with the fit's ridge."""
    q = leakage_quantile(eps)
    ridge = SIDE_RIDGE * scores.var()
    n, d = X.shape
    total = 0.0
    for c in np.unique(labels):
        rows = labels == c
        p = rows.sum() / n
        if rows.sum() <= d + 1:
            return math.inf
        cov = np.atleast_2d(np.cov(X[rows].T, bias=True))
        h = d * HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(cov)[1]
        h += side_cost(scores[rows].mean(), scores[rows].var() + ridge, q)
        total += p * (-math.log(p) + h)
    return total


@pytest.mark.parametrize("eps", [0.5, 0.05])
def test_fitted_partition_is_a_local_optimum_of_the_c3l_cost(eps: float) -> None:
    """energy_ is the from-scratch cost, and no single point move lowers it (brute force)."""
    X, scores = _data(0)
    model = C3L(4, leakage=eps, n_init=2, random_state=0, min_cluster_fraction=0.1).fit(
        X, side_scores=scores
    )
    labels = model.labels_
    base = _cost(X, scores, labels, eps)
    assert model.energy_ == pytest.approx(base, rel=1e-9)
    for i in range(X.shape[0]):
        for c in range(model.n_clusters_):
            if c != labels[i]:
                moved = labels.copy()
                moved[i] = c
                assert _cost(X, scores, moved, eps) >= base - 1e-9


def test_half_means_no_constraint() -> None:
    """eps >= 1/2 is plain CEC with the product family: same run for 0.5 and 0.9."""
    X, scores = _data(1)
    a = C3L(4, leakage=0.5, n_init=2, random_state=3).fit(X, side_scores=scores)
    b = C3L(4, leakage=0.9, n_init=2, random_state=3).fit(X, side_scores=scores)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.energy_ == b.energy_


@pytest.mark.parametrize("seed", range(3))
def test_leakage_per_cluster_is_at_most_eps(seed: int) -> None:
    X, scores = _data(seed, 120)
    for eps in (0.2, 0.05, 0.01, 0.001):
        model = C3L(5, leakage=eps, n_init=2, random_state=seed).fit(X, side_scores=scores)
        assert model.leakage_.shape == (model.n_clusters_,)
        assert np.all(model.leakage_ <= eps + 1e-9)
        assert set(model.sides_.tolist()) <= {-1, 1}


def test_cost_of_a_fixed_partition_is_monotone_in_eps() -> None:
    X, scores = _data(2)
    labels = C3L(4, leakage=0.01, n_init=1, random_state=0).fit(X, side_scores=scores).labels_
    costs = [_cost(X, scores, labels, e) for e in (1e-4, 0.001, 0.01, 0.05, 0.1, 0.3, 0.5)]
    assert all(a >= b for a, b in itertools.pairwise(costs))
    assert costs[0] > costs[-1]


def test_small_eps_separates_the_sides() -> None:
    """The blob cut by the boundary is split at it when eps is small, not when eps = 1/2."""
    X, scores = _data(3, 300)
    positive = scores >= 0

    def mixed(eps: float) -> float:
        labels = C3L(6, leakage=eps, n_init=3, random_state=0).fit(X, side_scores=scores).labels_
        return (
            sum(
                min(positive[labels == c].sum(), (~positive[labels == c]).sum())
                for c in np.unique(labels)
            )
            / X.shape[0]
        )

    assert mixed(0.001) < mixed(0.5)
    assert mixed(0.001) < 0.05


def test_scaling_the_scores_shifts_the_energy_by_ln_a() -> None:
    X, scores = _data(4)
    a = C3L(4, leakage=0.05, n_init=2, random_state=1).fit(X, side_scores=scores)
    b = C3L(4, leakage=0.05, n_init=2, random_state=1).fit(X, side_scores=3.0 * scores)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert b.energy_ - a.energy_ == pytest.approx(math.log(3.0), abs=1e-9)


def test_progress_stop_and_reproducibility() -> None:
    X, scores = _data(5)
    calls: list[int] = []

    def stop(iteration: int, cost: float) -> bool:
        calls.append(iteration)
        assert math.isfinite(cost)
        return len(calls) < 2

    model = C3L(4, n_init=3, random_state=0, progress=stop).fit(X, side_scores=scores)
    assert calls == [1, 2]
    assert model.labels_.shape == (X.shape[0],)
    assert model.energy_ == pytest.approx(_cost(X, scores, model.labels_, 0.05), rel=1e-9)
    first = C3L(4, n_init=2, random_state=9).fit(X, side_scores=scores)
    again = clone(first).fit(X, side_scores=scores)
    np.testing.assert_array_equal(first.labels_, again.labels_)
    assert first.n_features_in_ == 2


def test_scores_from_labels_stay_finite() -> None:
    """Constant scores inside a cluster (scores derived from labels) are handled by the ridge."""
    X, scores = _data(6)
    model = C3L(4, leakage=0.01, n_init=2, random_state=0).fit(
        X, side_scores=np.sign(scores) + (scores == 0)
    )
    assert math.isfinite(model.energy_)


def test_validation_errors() -> None:
    X, scores = _data(0, 30)
    with pytest.raises(ValueError, match="one score per sample"):
        C3L(3).fit(X, side_scores=scores[:-1])
    bad = scores.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match=r"side_scores\[4\]"):
        C3L(3).fit(X, side_scores=bad)
    with pytest.raises(ValueError, match="real numbers"):
        C3L(3).fit(X, side_scores=["a"] * 30)
    with pytest.raises(ValueError, match="leakage"):
        C3L(3, leakage=0.0).fit(X, side_scores=scores)
    with pytest.raises(ValueError, match="leakage"):
        C3L(3, leakage=1.5).fit(X, side_scores=scores)
    with pytest.raises(ValueError, match="init"):
        C3L(3, init="nope").fit(X, side_scores=scores)
    nan_x = X.copy()
    nan_x[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        C3L(3).fit(nan_x, side_scores=scores)
    # without side_scores C3L is CEC on X (test_side_info_routing.py), no longer an error
