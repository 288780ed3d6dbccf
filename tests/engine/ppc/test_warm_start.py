"""PPC(warm_start=True): a refit continues the previous mixture instead of drawing a new one."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import PPC

# Four equal blobs at the corners of a square: with two components, "left | right" and
# "bottom | top" are equally good mixtures, so which one a fit lands in depends on its start.
CORNERS = np.array([[-4.0, -4.0], [-4.0, 4.0], [4.0, -4.0], [4.0, 4.0]])


def _corners(per_blob: int = 40) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([c + rng.standard_normal((per_blob, 2)) for c in CORNERS])


def _split(X: np.ndarray, axis: int) -> np.ndarray:
    return (X[:, axis] > 0).astype(np.int64)


def _agree(a: np.ndarray, b: np.ndarray) -> float:
    return max(float(np.mean(a == b)), float(np.mean(a != b)))  # two clusters: either numbering


def _fitted_on(X: np.ndarray, axis: int) -> PPC:
    """A full-covariance fit started in the split along ``axis``."""
    side = _split(X, axis)
    means = np.array([X[side == 0].mean(axis=0), X[side == 1].mean(axis=0)])
    return PPC(2, covariance="full", means_init=means, random_state=0).fit(X)


@pytest.mark.parametrize("axis", [0, 1])
def test_both_splits_of_the_corners_are_fixed_points(axis: int) -> None:
    X = _corners()
    assert _agree(_fitted_on(X, axis).labels_, _split(X, axis)) >= 0.98  # the other: 0.5


@pytest.mark.parametrize("seed", range(4))
def test_a_warm_refit_with_one_more_relation_keeps_the_split_it_continues(seed: int) -> None:
    X = _corners()
    model = _fitted_on(X, axis=1)  # bottom | top
    # A must-link within the bottom-left blob says nothing about which split is right.
    model.set_params(warm_start=True, means_init=None, random_state=seed)
    model.fit(X, pairs=[[0, 1]], weights=[np.inf])
    assert model.warm_started_
    assert _agree(model.labels_, _split(X, 1)) >= 0.98


def test_a_warm_refit_on_the_same_data_stops_where_the_last_fit_ended() -> None:
    X = _corners()
    model = PPC(2, covariance="full", random_state=0).fit(X)
    before = model.lower_bound_
    model.set_params(warm_start=True)
    model.fit(X)
    assert model.warm_started_
    assert model.n_iter_ <= 2
    assert model.lower_bound_ == pytest.approx(before, rel=1e-9)


def test_without_warm_start_a_refit_equals_a_fresh_fit() -> None:
    X = _corners()
    model = PPC(2, random_state=3).fit(X)
    model.fit(X, pairs=[[0, 1]], weights=[np.inf])
    fresh = clone(model).fit(X, pairs=[[0, 1]], weights=[np.inf])
    assert not model.warm_started_
    np.testing.assert_array_equal(model.labels_, fresh.labels_)
    np.testing.assert_allclose(model.means_, fresh.means_)


def test_another_number_of_components_starts_afresh() -> None:
    X = _corners()
    model = PPC(2, covariance="full", random_state=0, warm_start=True).fit(X)
    assert not model.warm_started_  # nothing to continue on a first fit
    model.set_params(n_components=4)
    model.fit(X)
    fresh = PPC(4, covariance="full", random_state=0).fit(X)
    assert not model.warm_started_
    np.testing.assert_allclose(model.means_, fresh.means_)


def test_another_covariance_model_starts_afresh() -> None:
    X = _corners()
    model = PPC(2, covariance="full", random_state=0, warm_start=True).fit(X)
    model.set_params(covariance="tied")
    model.fit(X)
    fresh = PPC(2, covariance="tied", random_state=0).fit(X)
    assert not model.warm_started_
    np.testing.assert_allclose(model.means_, fresh.means_)


def test_under_auto_the_other_model_still_competes() -> None:
    # Two long parallel bars: the tied model fits them; relations along each bar tell it so.
    rng = np.random.default_rng(1)
    bar = np.column_stack([rng.uniform(-10, 10, 150), 0.3 * rng.standard_normal(150)])
    X = np.concatenate([bar - np.array([0.0, 1.5]), bar + np.array([0.0, 1.5])])
    truth = np.repeat([0, 1], 150)
    model = PPC(2, random_state=0, warm_start=True).fit(X)  # no relations: full
    assert model.covariance_ == "full"
    ends = [[i, i + 1] for i in range(0, 150, 15)] + [[i, i + 1] for i in range(150, 300, 15)]
    apart = [[i, 150 + i] for i in range(0, 150, 15)]
    pairs = np.array(ends + apart)
    weights = np.array([np.inf] * len(ends) + [-np.inf] * len(apart))
    model.fit(X, pairs=pairs, weights=weights)
    fresh = PPC(2, random_state=0).fit(X, pairs=pairs, weights=weights)
    assert model.covariance_ == fresh.covariance_
    assert _agree(model.predict(X), truth) >= _agree(fresh.predict(X), truth) - 0.01


def test_start_from_a_kept_mixture_is_the_same_as_continuing_the_estimator() -> None:
    X = _corners()
    model = _fitted_on(X, axis=1)
    kept = (model.weights_, model.means_, model.covariances_, model.covariance_)
    other = PPC(2, covariance="full", random_state=5).start_from(*kept)
    other.fit(X, pairs=[[0, 1]], weights=[np.inf])
    model.set_params(warm_start=True, means_init=None, random_state=5)
    model.fit(X, pairs=[[0, 1]], weights=[np.inf])
    assert other.warm_started_ and model.warm_started_
    np.testing.assert_array_equal(other.labels_, model.labels_)
    np.testing.assert_allclose(other.means_, model.means_)


@pytest.mark.parametrize(
    ("weights", "covariances", "covariance", "message"),
    [
        ([0.5, 0.5], np.ones((2, 2)), "full", "shape"),
        ([0.7, 0.7], np.stack([np.eye(2)] * 2), "full", "summing to 1"),
        ([0.5, 0.5], np.stack([np.eye(2), np.zeros((2, 2))]), "full", "singular"),
        ([0.5, 0.5], np.ones((2, 2)), "auto", "covariance"),
    ],
)
def test_start_from_refuses_a_mixture_it_cannot_continue(
    weights: list[float], covariances: np.ndarray, covariance: str, message: str
) -> None:
    model = PPC(2)
    with pytest.raises(ValueError, match=message):
        model.start_from(weights, np.zeros((2, 2)), covariances, covariance)
    assert not hasattr(model, "means_")  # nothing half-set


def test_a_fresh_start_replaces_a_continued_fit_the_new_relations_contradict() -> None:
    """Iris (standardised), seed 9: the first fit lands in a wrong partition; 25 true relations
    contradict it. Continued alone, EM stays near it; a fresh start agrees with more of the
    relations, so the warm-started fit keeps the fresh one."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = PPC(3, covariance="full", random_state=9).fit(X)
    assert adjusted_rand_score(y, model.labels_) < 0.6
    rng = np.random.default_rng(9)
    pairs = rng.choice(150, (25, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    weights = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], np.inf, -np.inf)
    start = {"weights_init": model.weights_, "means_init": model.means_}
    start["covariances_init"] = model.covariances_
    alone = PPC(3, covariance="full", random_state=9, **start).fit(X, pairs=pairs, weights=weights)
    fresh = PPC(3, covariance="full", random_state=9).fit(X, pairs=pairs, weights=weights)
    model.set_params(warm_start=True)
    model.fit(X, pairs=pairs, weights=weights)
    assert adjusted_rand_score(y, alone.labels_) < adjusted_rand_score(y, fresh.labels_) - 0.1
    assert not model.warm_started_
    np.testing.assert_array_equal(model.labels_, fresh.labels_)
