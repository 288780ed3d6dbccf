"""C4S ``covariance='tied_spherical'``: spherical Gaussians sharing one variance, against brute
force over every partition of tiny sets, numpy from scratch, and the constraints."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from app.engine import C4S
from app.engine.c4s.tied_spherical import pooled_variance, start_variance, tied_cost


def _tied_cost_from_scratch(X: np.ndarray, clusters: np.ndarray) -> float:
    """sum p (-ln p) + (d/2) ln(2 pi e v) with v the pooled within-cluster variance per feature."""
    n, d = X.shape
    sse, entropy = 0.0, 0.0
    for c in np.unique(clusters):
        members = X[clusters == c]
        sse += float(((members - members.mean(axis=0)) ** 2).sum())
        p = members.shape[0] / n
        entropy -= p * math.log(p)
    return entropy + 0.5 * d * math.log(2 * math.pi * math.e * sse / (n * d))


def test_pooled_variance_and_tied_cost_match_numpy() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1.0, 2.0, 0.5]
    clusters = rng.integers(0, 4, 40)
    within = sum(((X[clusters == c] - X[clusters == c].mean(0)) ** 2).sum() for c in range(4))
    v = pooled_variance(X, clusters)
    assert v == pytest.approx(within / (40 * 3), rel=1e-12)
    assert tied_cost(clusters, v, 3) == pytest.approx(_tied_cost_from_scratch(X, clusters))
    # constant clusters keep a finite (floored) variance
    assert pooled_variance(np.repeat([[0.0], [5.0]], 3, axis=0), np.repeat([0, 1], 3)) > 0.0
    assert start_variance(np.zeros((5, 2)), 2) == 1.0


def _tiny(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0.0, 1.0, (5, 2)), rng.normal([4.0, 1.0], 1.0, (4, 2))])


def _brute_force(
    X: np.ndarray, ml: np.ndarray, cl: np.ndarray, min_size: int
) -> tuple[float, np.ndarray]:
    """Lowest tied cost over every partition into 1 or 2 clusters of at least min_size points
    that keeps every constraint."""
    n = X.shape[0]
    best = (math.inf, np.zeros(n, dtype=np.int64))
    for bits in itertools.product((0, 1), repeat=n - 1):
        clusters = np.array((0, *bits), dtype=np.int64)
        sizes = np.bincount(clusters, minlength=2)
        if sizes[1] and sizes.min() < min_size:
            continue
        if np.any(clusters[ml[:, 0]] != clusters[ml[:, 1]]):
            continue
        if np.any(clusters[cl[:, 0]] == clusters[cl[:, 1]]):
            continue
        cost = _tied_cost_from_scratch(X, clusters)
        if cost < best[0]:
            best = (cost, clusters)
    return best


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("constrained", [False, True])
def test_fit_reaches_the_brute_force_optimum_of_tiny_sets(seed: int, constrained: bool) -> None:
    X = _tiny(seed)
    ml = np.array([[0, 5]]) if constrained else np.empty((0, 2), dtype=np.int64)
    cl = np.array([[1, 6]]) if constrained else np.empty((0, 2), dtype=np.int64)
    model = C4S(2, covariance="tied_spherical", n_init=10, min_cluster_fraction=0.0)
    model.set_params(random_state=seed).fit(X, must_link=ml, cannot_link=cl)
    cost, _ = _brute_force(X, ml, cl, min_size=2)
    assert model.energy_ == pytest.approx(cost, rel=1e-9)
    assert model.energy_ == pytest.approx(_tied_cost_from_scratch(X, model.cluster_labels_))


def test_fitted_gaussians_share_the_pooled_variance_and_predict_by_the_cec_rule() -> None:
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 1, (60, 3)), rng.normal(4, 2, (40, 3))])
    model = C4S(2, covariance="tied_spherical", n_init=3, random_state=0).fit(X)
    v = pooled_variance(X, model.cluster_labels_)
    np.testing.assert_allclose(model.covariances_, v, rtol=1e-12)
    assert model.covariance_ == "tied_spherical"
    # energy_ is the tied cost; the history is the cost at the round's fixed variance, never lower
    assert model.energy_ <= model.energy_history_[-1] + 1e-9
    scores = np.log(model.weights_)[None, :] - ((X[:, None, :] - model.means_) ** 2).sum(-1) / (
        2 * v
    )
    np.testing.assert_array_equal(model.predict(X), model.cluster_groups_[scores.argmax(1)])


def test_the_fit_does_not_depend_on_the_units_of_x() -> None:
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(0, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
    ml, cl = np.array([[0, 1], [50, 51]]), np.array([[0, 50]])
    a = C4S(3, covariance="tied_spherical", n_init=2, random_state=0)
    b = C4S(3, covariance="tied_spherical", n_init=2, random_state=0)
    a.fit(X, must_link=ml, cannot_link=cl)
    b.fit(7.5 * X, must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.covariances_, 7.5**2 * a.covariances_, rtol=1e-9)
    assert b.energy_ == pytest.approx(a.energy_ + 2 * math.log(7.5), rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_constraints_drawn_from_the_truth_always_hold(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 2)) + np.repeat([[0, 0], [2, 0], [1, 2]], 40, axis=0)
    truth = np.repeat([0, 1, 2], 40)
    pairs = rng.choice(120, (40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    ml, cl = pairs[same], pairs[~same]
    model = C4S(3, covariance="tied_spherical", n_init=2, random_state=seed)
    labels = model.fit_predict(X, must_link=ml, cannot_link=cl)
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
    assert np.all(labels[cl[:, 0]] != labels[cl[:, 1]])


def test_a_cancelled_fit_stops_in_its_first_round_with_a_valid_partition() -> None:
    X = _tiny(0)
    calls: list[int] = []

    def stop_at_once(iteration: int, _energy: float) -> bool:
        calls.append(iteration)
        return False

    cl = np.array([[0, 6]])
    model = C4S(2, covariance="tied_spherical", n_init=3, random_state=0, progress=stop_at_once)
    model.fit(X, cannot_link=cl)
    assert calls == [1]
    assert model.labels_[0] != model.labels_[6]
