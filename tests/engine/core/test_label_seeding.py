"""CEC-IB starts from the labels: one centre per category at its labeled points' mean."""

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import CEC, CECIB
from app.engine.core.cost import cec_ib_energy
from app.engine.core.label_seeding import (
    label_seeded_partition,
    labeled_agreement,
    resampled_categories,
)


def _whiten_by_hand(X: np.ndarray) -> np.ndarray:
    centred = X - X.mean(axis=0)
    chol = np.linalg.cholesky(np.cov(centred.T, bias=True))
    return centred @ np.linalg.inv(chol).T


def test_one_centre_per_category_at_its_labeled_mean() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1.0, 10.0, 0.1]
    categories = np.full(40, -1)
    categories[[0, 5, 9]] = 0
    categories[[1, 2]] = 1
    Z = _whiten_by_hand(X)
    centres = np.array([Z[categories == j].mean(axis=0) for j in (0, 1)])
    expected = ((Z[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
    got = label_seeded_partition(X, categories, 2, 2, np.random.RandomState(0))
    np.testing.assert_array_equal(got, expected)


def test_extra_centres_take_points_from_the_category_clusters() -> None:
    """k > categories: the categories keep their centres; the extra ones (drawn points) take
    over the points nearer to them, so every category cluster only holds points nearer to
    its own labeled mean than to the other's."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    categories = np.where(np.arange(60) < 4, np.arange(60) % 2, -1)
    got = label_seeded_partition(X, categories, 2, 5, np.random.RandomState(2))
    assert np.unique(got).shape[0] == 5
    Z = _whiten_by_hand(X)
    centres = np.array([Z[categories == c].mean(axis=0) for c in range(2)])
    for c in range(2):
        own = ((Z[got == c] - centres[c]) ** 2).sum(axis=1)
        other = ((Z[got == c] - centres[1 - c]) ** 2).sum(axis=1)
        assert np.all(own <= other + 1e-9)


def test_the_start_ignores_affine_maps_of_the_data() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 3))
    categories = np.where(np.arange(80) % 8 == 0, np.arange(80) % 3, -1)
    A = rng.normal(size=(3, 3))
    a = label_seeded_partition(X, categories, 3, 6, np.random.RandomState(5))
    b = label_seeded_partition(X @ A.T + 4.0, categories, 3, 6, np.random.RandomState(5))
    np.testing.assert_array_equal(a, b)


def test_beta_zero_starts_like_plain_cec() -> None:
    rng = np.random.default_rng(6)
    X = rng.normal(size=(150, 2)) + np.repeat([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]], 50, axis=0)
    y = np.where(np.arange(150) % 5 == 0, np.arange(150) // 50, -1)
    ib = CECIB(5, beta=0.0, n_init=2, random_state=3).fit(X, y=y)
    np.testing.assert_array_equal(ib.labels_, CEC(5, n_init=2, random_state=3).fit(X).labels_)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("load", "floor"),
    [(load_wine, 0.85), (load_breast_cancer, 0.70), (load_digits, 0.80)],
    ids=["wine", "breast_cancer", "digits"],
)
def test_ten_percent_labels_beat_the_seeded_k_means_peers(
    load: Callable[..., Any], floor: float
) -> None:
    """Issue 18's comparison on the features as the API passes them (no scaling), one cluster
    per category: mean ARI over three labelings of 10% of the items. Measured (10 labelings,
    docs/cec-ib.md): CEC-IB 0.92, 0.72, 0.87; the best of SeededKMeans and ConstrainedKMeans
    0.40, 0.54, 0.76 on these features (0.91, 0.71, 0.66 after standardising). The floors sit above
    the best peer on these features and leave room for the spread over three labelings."""
    X, truth = load(return_X_y=True)
    scores = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        y = np.full(truth.shape[0], -1)
        chosen = rng.choice(truth.shape[0], round(0.1 * truth.shape[0]), replace=False)
        y[chosen] = truth[chosen]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # digits: fitted on 10 components
            model = CECIB(np.unique(truth).size, init="labels", random_state=0).fit(X, y=y)
        scores.append(adjusted_rand_score(truth, model.labels_))
    assert np.mean(scores) > floor


def test_the_refined_start_is_a_k_means_fixed_point_in_whitened_space() -> None:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 2)) + np.repeat([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]], 30, axis=0)
    categories = np.where(np.arange(90) % 10 == 0, np.arange(90) // 30, -1)
    got = label_seeded_partition(X, categories, 3, 3, np.random.RandomState(0), refine=True)
    Z = _whiten_by_hand(X)
    centres = np.array([Z[got == c].mean(axis=0) for c in range(3)])
    nearest = ((Z[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(nearest, got)


def test_resampled_categories_keep_a_labeled_subset_of_every_category() -> None:
    categories = np.array([-1, 0, 0, 1, -1, 1, 1, 2, 0, -1, 2, 1])
    for seed in range(20):
        got = resampled_categories(categories, 3, np.random.RandomState(seed))
        kept = got >= 0
        np.testing.assert_array_equal(got[kept], categories[kept])  # same category, labeled only
        assert set(got[kept]) == {0, 1, 2}


def _agreement(labels: np.ndarray, y: np.ndarray) -> int:
    return labeled_agreement(labels, y, int(labels.max()) + 1, int(y.max()) + 1)


def test_labeled_agreement_counts_items_in_their_clusters_majority() -> None:
    assign = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 0])
    categories = np.array([0, 0, 1, 1, 1, -1, -1, -1, -1, 2])
    # cluster 0 holds categories 0, 0, 1, 2 (majority 2 items); cluster 1: 1, 1; cluster 2: none
    assert labeled_agreement(assign, categories, 3, 3) == 4


def test_further_starts_reach_lower_energy_on_iris() -> None:
    """The first two starts (labeled means, then Lloyd-refined) are deterministic, so further
    restarts from resampled labeled items can only keep or improve (agreement with the labeled
    items, then energy). On iris with five labeled items per class (this draw) every start agrees
    with all labeled items and the further ones reach a lower energy, nearer the classes
    (measured ARI 0.75 with two starts, 0.94 with ten)."""
    X, truth = load_iris(return_X_y=True)
    rng = np.random.default_rng(1)
    y = np.full(truth.shape[0], -1)
    for c in range(3):
        chosen = rng.choice(np.flatnonzero(truth == c), 5, replace=False)
        y[chosen] = c
    two = CECIB(3, n_init=2, init="labels", random_state=0).fit(X, y=y)
    ten = CECIB(3, n_init=10, init="labels", random_state=0).fit(X, y=y)
    assert _agreement(ten.labels_, y) == _agreement(two.labels_, y) == 15
    assert ten.energy_ < two.energy_ - 1e-3
    assert adjusted_rand_score(truth, ten.labels_) > adjusted_rand_score(truth, two.labels_)
    np.testing.assert_allclose(ten.energy_, cec_ib_energy(X, ten.labels_, y, beta=1.0), rtol=1e-9)


@pytest.mark.slow
def test_agreement_with_the_labels_ranks_before_energy() -> None:
    """Digits (standardised, 10 principal components, 10% of each class labeled, draw 1): the
    lowest-energy restart merges labeled categories (measured: energy 14.710, 83% of the labeled
    items in their cluster's majority, ARI 0.57); the kept fit agrees with more labeled items
    than any lower-energy one would, and so with at least as many as the first two starts."""
    X, truth = load_digits(return_X_y=True)
    Z = PCA(10, random_state=0).fit_transform(StandardScaler().fit_transform(X))
    rng = np.random.default_rng(1)
    y = np.full(truth.shape[0], -1)
    for c in range(10):
        members = np.flatnonzero(truth == c)
        y[rng.choice(members, round(0.1 * members.shape[0]), replace=False)] = c
    two = CECIB(10, n_init=2, init="labels", random_state=0).fit(Z, y=y)
    ten = CECIB(10, n_init=10, init="labels", random_state=0).fit(Z, y=y)
    assert _agreement(ten.labels_, y) >= _agreement(two.labels_, y)
    if _agreement(ten.labels_, y) == _agreement(two.labels_, y):
        assert ten.energy_ <= two.energy_
    assert adjusted_rand_score(truth, ten.labels_) > 0.65


def test_a_start_already_run_is_not_run_again() -> None:
    """Well-separated blobs with many labeled items: every resampled labeled start refines to
    the Lloyd-refined one, so ten restarts sweep exactly as often as two and end alike."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 2)) + np.repeat([[0.0, 0.0], [9.0, 0.0], [0.0, 9.0]], 100, axis=0)
    y = np.where(np.arange(300) % 2 == 0, np.arange(300) // 100, -1)
    sweeps = {2: 0, 10: 0}
    fits = {}
    for n_init in sweeps:

        def count(_iteration: int, _energy: float, n_init: int = n_init) -> bool:
            sweeps[n_init] += 1
            return True

        model = CECIB(3, n_init=n_init, init="labels", random_state=0, progress=count)
        fits[n_init] = model.fit(X, y=y)
    assert sweeps[10] == sweeps[2] > 0
    np.testing.assert_array_equal(fits[10].labels_, fits[2].labels_)
    assert fits[10].energy_ == fits[2].energy_
