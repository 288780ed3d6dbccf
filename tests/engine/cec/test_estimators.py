"""CEC and CECIB estimators: optimiser against brute force, fitted state, behaviour oracles."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from app.engine import (
    CEC,
    CECIB,
    cec_ib_energy,
    label_constraint_satisfaction,
    normalized_mutual_info,
)
from tests.engine._support.partitions import set_partitions


def _blobs(seed: int = 0, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    return np.vstack([c + rng.normal(size=(n, 2)) for c in centers])


def _best_partition_cost(
    X: np.ndarray, y: np.ndarray | None, beta: float, min_points: int, max_clusters: int
) -> float:
    best = math.inf
    for labels in set_partitions(X.shape[0]):
        part = np.array(labels)
        sizes = np.bincount(part)
        if part.max() < max_clusters and sizes.min() >= min_points:
            best = min(best, cec_ib_energy(X, part, y, beta))
    return best


def test_optimiser_finds_brute_force_optimum_on_separated_tiny_data() -> None:
    X = np.array([0.0, 0.1, 0.25, 5.0, 5.2, 5.3, 10.0, 10.15, 10.4])[:, None]
    best = _best_partition_cost(X, None, 0.0, 3, 3)
    model = CEC(3, min_cluster_fraction=0.0, n_init=5, random_state=0).fit(X)
    assert model.energy_ == pytest.approx(best, rel=1e-12)
    np.testing.assert_array_equal(model.labels_, [0, 0, 0, 1, 1, 1, 2, 2, 2])


@pytest.mark.parametrize("seed", range(3))
def test_optimiser_cost_agrees_with_brute_force_on_random_tiny_data(seed: int) -> None:
    """The reported energy is eq. (10) of the reported partition, never below the optimum over
    all partitions into blocks of >= 3 points, and no single move improves it (T16)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(9, 1)) + np.repeat([0.0, 2.0, 4.0], 3)[:, None]
    y = np.array([0, -1, 0, 1, -1, 1, -1, 1, 0])
    best = _best_partition_cost(X, y, 1.0, 3, 3)
    model = CECIB(3, beta=1.0, min_cluster_fraction=0.0, n_init=5, random_state=seed).fit(X, y)
    energy = cec_ib_energy(X, model.labels_, y, 1.0)
    assert model.energy_ == pytest.approx(energy, rel=1e-12)
    assert model.energy_ >= best - 1e-12
    sizes = np.bincount(model.labels_)
    for i in range(9):
        for j in range(model.n_clusters_):
            if j != model.labels_[i] and sizes[model.labels_[i]] > 3:
                moved = model.labels_.copy()
                moved[i] = j
                assert cec_ib_energy(X, moved, y, 1.0) >= energy - 1e-12


def test_beta_zero_gives_plain_cec() -> None:
    """T2/T3: beta = 0, or no labels, reproduces CEC with the same seed."""
    X = _blobs(1)
    y = np.where(np.arange(120) % 4 == 0, np.arange(120) // 40, -1)
    cec = CEC(6, n_init=2, random_state=5).fit(X)
    for model in (
        CECIB(6, beta=0.0, n_init=2, random_state=5).fit(X, y),
        CECIB(6, beta=3.0, n_init=2, random_state=5).fit(X),
        CECIB(6, beta=1.0, n_init=2, random_state=5).fit(X, np.full(120, -1)),
    ):
        np.testing.assert_array_equal(model.labels_, cec.labels_)
        assert model.energy_ == pytest.approx(cec.energy_, rel=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_fitted_parameters_describe_the_partition(covariance: str) -> None:
    X = _blobs(2) * [1.0, 0.5]
    y = np.where(np.arange(120) % 3 == 0, np.arange(120) // 40, -1)
    model = CECIB(5, beta=0.5, covariance=covariance, n_init=2, random_state=0).fit(X, y)
    k = model.n_clusters_
    labels = model.labels_
    assert k <= 5
    assert model.energy_ == pytest.approx(cec_ib_energy(X, labels, y, 0.5, covariance), rel=1e-10)
    # renumbered 0..k'-1 by first occurrence
    _, first = np.unique(labels, return_index=True)
    assert np.all(np.diff(first) > 0) and labels[0] == 0
    np.testing.assert_allclose(model.weights_, np.bincount(labels) / 120, rtol=1e-14)
    assert np.bincount(labels).min() >= max(0.05 * 120, 4 if covariance == "full" else 3)
    for c in range(k):
        members = X[labels == c]
        np.testing.assert_allclose(model.means_[c], members.mean(axis=0), atol=1e-12)
        cov = np.cov(members.T, bias=True)
        expected = {"full": cov, "diagonal": np.diag(cov), "spherical": np.trace(cov) / 2}
        np.testing.assert_allclose(model.covariances_[c], expected[covariance], atol=1e-12)
    assert model.converged_ and 1 <= model.n_iter_ <= 100
    assert model.n_features_in_ == 2


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_predict_is_the_cec_rule(covariance: str) -> None:
    X = _blobs(3) @ np.array([[1.0, 0.3], [0.0, 1.0]])
    model = CEC(3, covariance=covariance, n_init=2, random_state=1).fit(X)
    grid = np.random.default_rng(0).uniform(-4, 10, size=(200, 2))
    scores = np.empty((200, model.n_clusters_))
    for c in range(model.n_clusters_):
        cov = model.covariances_[c]
        full = {"full": cov, "diagonal": np.diag(cov) if np.ndim(cov) == 1 else cov}.get(
            covariance, np.eye(2) * cov
        )
        scores[:, c] = np.log(model.weights_[c]) + multivariate_normal(
            model.means_[c], full
        ).logpdf(grid)
    np.testing.assert_array_equal(model.predict(grid), scores.argmax(axis=1))
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_fit_predict_and_reproducibility() -> None:
    X = _blobs(4)
    y = np.where(np.arange(120) % 5 == 0, np.arange(120) // 40, -1)
    a = CECIB(6, n_init=2, random_state=7).fit_predict(X, y)
    b = CECIB(6, n_init=2, random_state=7).fit(X, y).labels_
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        CEC(6, n_init=2, random_state=7).fit_predict(X),
        CEC(6, n_init=2, random_state=7).fit(X).labels_,
    )


@pytest.mark.parametrize("covariance", ["full", "spherical"])
def test_t14_fit_is_invariant_to_similarity_transforms(covariance: str) -> None:
    """Rotating, scaling and shifting X leaves the partition unchanged (k-means++ seeding uses
    Euclidean distances, which such maps only scale) and shifts the energy by ln|det A|."""
    X = _blobs(10)
    y = np.where(np.arange(120) % 4 == 0, np.arange(120) // 40, -1)
    rotation = np.linalg.qr(np.random.default_rng(3).normal(size=(2, 2)))[0]
    A = 2.5 * rotation
    base = CECIB(6, covariance=covariance, n_init=2, random_state=4).fit(X, y)
    moved = CECIB(6, covariance=covariance, n_init=2, random_state=4).fit(X @ A.T + [3, -7], y)
    np.testing.assert_array_equal(moved.labels_, base.labels_)
    shift = math.log(abs(np.linalg.det(A)))
    assert moved.energy_ == pytest.approx(base.energy_ + shift, rel=1e-9)


def test_t14_renaming_categories_changes_nothing() -> None:
    X = _blobs(11)
    y = np.where(np.arange(120) % 4 == 0, np.arange(120) // 40, -1)
    renamed = np.where(y >= 0, 100 - 7 * y, -1)
    a = CECIB(6, n_init=2, random_state=1).fit(X, y)
    b = CECIB(6, n_init=2, random_state=1).fit(X, renamed)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.energy_ == pytest.approx(b.energy_, rel=1e-12)


def test_energy_history_is_non_increasing_without_removals() -> None:
    X = _blobs(5)
    model = CEC(3, init="random", n_init=1, random_state=2, polish=False).fit(X)
    assert model.n_clusters_ == 3  # no cluster was removed, so every sweep lowered the energy
    history = model.energy_history_
    assert len(history) == model.n_iter_ >= 2
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(history))
    assert history[-1] == pytest.approx(model.energy_, rel=1e-14)


def test_progress_called_every_sweep_and_can_stop() -> None:
    X = _blobs(6)
    calls: list[tuple[int, float]] = []
    model = CEC(
        6, init="random", n_init=2, random_state=0, progress=lambda i, e: calls.append((i, e))
    )
    model.fit(X)
    assert [i for i, _ in calls] == list(range(1, len(calls) + 1))
    assert len(calls) >= model.n_iter_ + 1  # both restarts report

    stopped: list[int] = []

    def stop_now(iteration: int, energy: float) -> bool:
        stopped.append(iteration)
        return False

    y = np.where(np.arange(120) % 4 == 0, np.arange(120) // 40, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = CECIB(6, init="random", n_init=3, random_state=0, progress=stop_now).fit(X, y)
    assert stopped == [1]
    assert model.n_iter_ == 1 and not model.converged_
    # a consistent fitted state: parameters and energy belong to the returned partition
    assert model.energy_ == pytest.approx(cec_ib_energy(X, model.labels_, y, 1.0), rel=1e-10)
    for c in range(model.n_clusters_):
        np.testing.assert_allclose(model.means_[c], X[model.labels_ == c].mean(axis=0))
    assert model.predict(X).shape == (120,)


def test_non_convergence_warns() -> None:
    X = _blobs(7)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        model = CEC(6, init="random", n_init=1, max_iter=1, random_state=0).fit(X)
    assert not model.converged_ and model.n_iter_ == 1


def test_clusters_are_removed_down_to_the_structure() -> None:
    """k = 2 x classes on three separated blobs ends with three clusters (Table 2, Wine-like).

    With 250 points per blob the three blobs are the lowest energy found; with 60 per blob,
    splits into clusters of 10-15 points fit the sample noise and have lower energy (checked:
    3.959 vs 3.999), so small samples legitimately keep extra clusters.
    """
    X = _blobs(8, n=250)
    model = CEC(6, n_init=3, random_state=0).fit(X)
    assert model.n_clusters_ == 3
    assert model.energy_ <= cec_ib_energy(X, np.repeat([0, 1, 2], 250)) + 1e-12


def test_t11_labels_split_a_single_gaussian_above_beta0() -> None:
    """Example 4.1: CEC keeps one cluster; CEC-IB with labels by side and beta > beta_0 splits."""
    x = np.random.default_rng(0).normal(size=(300, 1))
    y = (x[:, 0] > 0).astype(int)
    assert CEC(2, n_init=2, random_state=0).fit(x).n_clusters_ == 1
    model = CECIB(2, beta=0.6, n_init=2, random_state=0).fit(x, y)
    assert model.n_clusters_ == 2
    assert label_constraint_satisfaction(model.labels_, y).overall > 0.95


def test_t12_random_labels_with_small_beta_keep_one_cluster() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = rng.integers(0, 2, size=200)
    assert CECIB(4, beta=0.5, n_init=2, random_state=0).fit(X, y).n_clusters_ == 1


def test_t13_coarse_labels_give_consistent_finer_clusters() -> None:
    """Fig. 1: two categories over four blobs. With beta = 1 every cluster is pure, and the
    clusters find the blobs, not just the categories: the 2-category partition has NMI
    2 ln 2 / ln 8 = 0.67 against the blobs, the blob partition 1."""
    rng = np.random.default_rng(2)
    centers = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0]])
    blob = np.repeat(np.arange(4), 100)
    X = centers[blob] + rng.normal(size=(400, 2))
    y = np.where(rng.random(400) < 0.3, blob // 2, -1)
    model = CECIB(8, beta=1.0, n_init=3, min_cluster_fraction=0.05, random_state=0).fit(X, y)
    assert model.n_clusters_ >= 4
    assert label_constraint_satisfaction(model.labels_, y).cannot_link == 1.0
    assert normalized_mutual_info(blob, model.labels_) > 0.85


BAD_INPUTS = [
    (CEC(2), np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 1.0]]), None, "NaN"),
    (CEC(2), np.array([[0.0, 1.0], [np.inf, 2.0], [3.0, 1.0]]), None, "infinity"),
    (CEC(1), np.array([[0.0, 1.0]]), None, "minimum of 2"),
    (CEC(0), np.arange(10.0).reshape(5, 2), None, "n_clusters must be between 1 and 5"),
    (CEC(6), np.arange(10.0).reshape(5, 2), None, "n_clusters must be between 1 and 5"),
    (CEC(2.5), np.arange(10.0).reshape(5, 2), None, "n_clusters must be an integer"),  # type: ignore[arg-type]
    (CEC(1), np.random.default_rng(0).normal(size=(3, 3)), None, "more samples than features"),
    (CEC(2, covariance="tied"), np.arange(10.0).reshape(5, 2), None, "covariance must be"),
    (CEC(2, n_init=0), np.arange(10.0).reshape(5, 2), None, "n_init must be"),
    (CEC(2, max_iter=0), np.arange(10.0).reshape(5, 2), None, "max_iter must be"),
    (CEC(2, min_cluster_fraction=1.0), np.arange(10.0).reshape(5, 2), None, "min_cluster_fr"),
    (CEC(2, init="kmeans"), np.arange(10.0).reshape(5, 2), None, "init must be"),
    (CEC(2, progress=3), np.arange(10.0).reshape(5, 2), None, "progress must be"),  # type: ignore[arg-type]
    (CECIB(2, beta=-0.1), np.arange(10.0).reshape(5, 2), None, "beta must be"),
    (CECIB(2, beta=math.nan), np.arange(10.0).reshape(5, 2), None, "beta must be"),
    (CECIB(2), np.arange(10.0).reshape(5, 2), [0, 1, -1], "y has 3 labels but X has 5"),
    (CECIB(2), np.arange(10.0).reshape(5, 2), [0, 1.5, -1, 0, 0], "must be integers"),
    (CECIB(2), np.arange(10.0).reshape(5, 2), ["a", "b", "a", "b", "a"], "must be integers"),
    (CECIB(2), np.arange(10.0).reshape(5, 2), [0, -2, 1, 0, 0], "-1 for unlabeled"),
]


@pytest.mark.parametrize(("model", "X", "y", "message"), BAD_INPUTS)
def test_bad_input_is_a_value_error_naming_the_problem(
    model: CEC, X: np.ndarray, y: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)


def test_predict_checks_the_feature_count() -> None:
    model = CEC(3, n_init=1, random_state=0).fit(_blobs(9))
    with pytest.raises(ValueError, match="features"):
        model.predict(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.array([[np.nan, 0.0]]))


def test_polishing_never_ends_above_the_unpolished_fit() -> None:
    """Polishing only continues converged starts and keeps a step only when its energy is
    lower, and it draws no random numbers: from the same seed the polished fit ends at or
    below the unpolished one, and its history is the start's followed by its steps'."""
    X = _blobs(7)
    for seed in range(4):
        plain = CEC(6, n_init=2, random_state=seed, polish=False).fit(X)
        polished = CEC(6, n_init=2, random_state=seed).fit(X)
        assert polished.energy_ <= plain.energy_ + 1e-12
        assert polished.energy_history_[-1] == pytest.approx(polished.energy_, rel=1e-12)
        assert len(polished.energy_history_) == polished.n_iter_


def test_twenty_equal_blobs_keep_every_cluster_with_the_defaults() -> None:
    """Issue 36: twenty well separated blobs of 5% each. A fixed 5% threshold removed half of
    them; 'auto' (0.25 / k) and greedy k-means++ keep all twenty from one start."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(1_000, 2, centers=20, center_box=(-100, 100), random_state=0)
    model = CEC(20, n_init=1, random_state=0).fit(X)
    assert model.min_cluster_fraction_ == pytest.approx(0.0125)
    assert model.n_clusters_ == 20
    assert adjusted_rand_score(y, model.labels_) == pytest.approx(1.0)


def test_a_cluster_constant_in_one_feature_is_singular_not_cheap() -> None:
    """Issue 36 (found against the authors' Java code, which has the same flaw): 29 setosa
    flowers whose petal widths are all 0.2 have a computed variance of 7e-33 there; the
    Cholesky test relative to that tiny entry accepted it and the fit reported -5.56 nats for
    a partition whose cost is +inf. Every fitted energy is the partition's true cost."""
    from sklearn.datasets import load_iris

    from app.engine.core.cost import cec_ib_energy
    from app.engine.core.linalg import cholesky_lower

    cov = np.diag([0.12, 7e-33, 0.05])
    assert not cholesky_lower(cov, np.empty((3, 3)))
    X, truth = load_iris(return_X_y=True)
    y = np.full(150, -1)
    chosen = np.random.default_rng(0).choice(150, size=30, replace=False)
    y[chosen] = truth[chosen]
    model = CECIB(6, min_cluster_fraction=0.05, n_init=10, random_state=0).fit(X, y)
    assert math.isfinite(model.energy_)
    assert model.energy_ == pytest.approx(cec_ib_energy(X, model.labels_, y, 1.0), abs=1e-9)


def test_removal_polishing_merges_a_split_blob_and_never_adds_clusters() -> None:
    """polish='remove' (the API's): only dissolving clusters, so never more clusters than the
    unpolished fit and never a higher energy; on three blobs asked for four it ends with three
    where a greedy start left one blob split in two."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=300, centers=3, cluster_std=0.6, random_state=3)
    for seed in range(5):
        plain = CEC(4, n_init=2, random_state=seed, polish=False).fit(X)
        removed = CEC(4, n_init=2, random_state=seed, polish="remove").fit(X)
        assert removed.energy_ <= plain.energy_ + 1e-12
        assert removed.n_clusters_ <= plain.n_clusters_
        assert removed.n_clusters_ == 3
        assert adjusted_rand_score(y, removed.labels_) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="polish must be"):
        CEC(2, polish="sometimes").fit(X)
