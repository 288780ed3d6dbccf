"""C4S ``covariance='auto'``: full and tied spherical are fitted and the fit whose Gaussians
(without the constraints) agree with more constraints is kept; the constraints hold either
way."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import C4S
from app.engine.c4s.auto_covariance import AUTO_FAMILIES, constraint_agreement


def test_agreement_counts_kept_constraints_by_brute_force() -> None:
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 3, 30)
    ml = rng.integers(0, 30, (12, 2))
    cl = rng.integers(0, 30, (9, 2))
    expected = sum(groups[i] == groups[j] for i, j in ml)
    expected += sum(groups[i] != groups[j] for i, j in cl)
    assert constraint_agreement(groups, ml, cl) == expected


def core_and_halo(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two classes side by side with the same spread, each a tight core inside a wide halo
    (heavy tails): full covariances can fit core against halo, the classes are the spherical
    split. Constraints from the truth."""
    rng = np.random.default_rng(seed)
    parts = []
    for centre in (-2.5, 2.5):
        core = rng.normal([centre, 0.0], 0.5, (150, 2))
        halo = rng.normal([centre, 0.0], 1.6, (150, 2))
        parts += [core, halo]
    X = np.concatenate(parts)
    truth = np.repeat([0, 1], 300)
    pairs = rng.choice(600, (60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    return X, truth, pairs[same], pairs[~same]


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_keeps_the_family_whose_gaussians_agree_more(seed: int) -> None:
    X, _, ml, cl = core_and_halo(seed)
    fits = {
        name: C4S(2, covariance=name, n_init=3, random_state=0).fit(X, must_link=ml, cannot_link=cl)
        for name in AUTO_FAMILIES
    }
    scores = {name: constraint_agreement(f.predict(X), ml, cl) for name, f in fits.items()}
    auto = C4S(2, covariance="auto", n_init=3, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert auto.covariance_agreement_ == scores
    best = max(fits, key=lambda name: scores[name])  # the first of the best on a tie
    assert auto.covariance_ == best
    np.testing.assert_array_equal(auto.labels_, fits[best].labels_)
    np.testing.assert_array_equal(auto.predict(X), fits[best].predict(X))
    assert np.all(auto.labels_[ml[:, 0]] == auto.labels_[ml[:, 1]])
    assert np.all(auto.labels_[cl[:, 0]] != auto.labels_[cl[:, 1]])


def test_auto_without_constraints_is_full() -> None:
    X, _, _, _ = core_and_halo(0)
    auto = C4S(2, covariance="auto", n_init=2, random_state=0).fit(X)
    full = C4S(2, covariance="full", n_init=2, random_state=0).fit(X)
    assert auto.covariance_ == "full" and auto.covariance_agreement_ == {"full": 0}
    np.testing.assert_array_equal(auto.labels_, full.labels_)


def test_a_cancelled_auto_fit_stops_after_the_first_family() -> None:
    X, _, ml, cl = core_and_halo(0)
    calls: list[int] = []

    def stop_at_once(iteration: int, _energy: float) -> bool:
        calls.append(iteration)
        return False

    auto = C4S(2, covariance="auto", n_init=2, random_state=0, progress=stop_at_once)
    auto.fit(X, must_link=ml, cannot_link=cl)
    assert list(auto.covariance_agreement_) == ["full"]
    assert calls == [1]
    assert np.all(auto.labels_[cl[:, 0]] != auto.labels_[cl[:, 1]])


def test_unknown_covariance_is_refused() -> None:
    X, _, ml, cl = core_and_halo(0)
    with pytest.raises(ValueError, match="covariance"):
        C4S(2, covariance="tied").fit(X, must_link=ml, cannot_link=cl)


@pytest.mark.slow
def test_on_breast_cancer_auto_keeps_the_tied_spherical_class_split() -> None:
    """bench_constraints' breast cancer (standardised, PCA to 10), 50 pairs, first draw: full
    covariances fit a core and a halo that the constraints contradict; auto keeps the tied
    spherical model, which follows the classes as the peers' k-means does (ARI 0.71)."""
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.bench_constraints import draw_pairs, load

    X, y = load("breast_cancer")
    ml, cl = draw_pairs(y, 50, 1000 * 50)
    full = C4S(2, covariance="full", random_state=0).fit(X, must_link=ml, cannot_link=cl)
    auto = C4S(2, covariance="auto", random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert auto.covariance_ == "tied_spherical"
    assert auto.covariance_agreement_["tied_spherical"] > auto.covariance_agreement_["full"]
    assert adjusted_rand_score(y, auto.labels_) > adjusted_rand_score(y, full.labels_) + 0.1
    assert adjusted_rand_score(y, auto.labels_) > 0.68  # PCKMeans, MPCKMeans, COPKMeans: 0.67-0.68


def test_singular_data_is_clustered_in_its_principal_components_and_predicted() -> None:
    """A constant feature (digits' blank pixels) leaves every full covariance singular: C4S fits
    the leading principal components, as CEC does, so ``predict`` (which auto uses) works."""
    rng = np.random.default_rng(3)
    blobs = np.concatenate([rng.normal(-3, 1, (40, 2)), rng.normal(3, 1, (40, 2))])
    X = np.column_stack([blobs, np.zeros(80)])
    ml = np.array([[0, 1], [40, 41]])
    cl = np.array([[0, 40]])
    with pytest.warns(UserWarning, match="singular"):
        model = C4S(2, n_init=2, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert model.projection_ is not None and model.means_.shape[1] == 2
    predicted = model.predict(X)
    assert np.mean(predicted == model.labels_) > 0.95
    auto = C4S(2, covariance="auto", n_init=2, random_state=0)
    with pytest.warns(UserWarning, match="singular"):
        auto.fit(X, must_link=ml, cannot_link=cl)
    assert list(auto.covariance_agreement_) == list(AUTO_FAMILIES)
