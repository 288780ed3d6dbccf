"""PPC's k-means start in the metric of the groups the relations and labels imply (RCA)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import sqrtm
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from app.engine import PPC
from app.engine.ppc.start import GROUP_SHRINKAGE, group_whitening


def _brute_force(X: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The shrunk within-group scatter's inverse square root, by loops and scipy's sqrtm."""
    d = X.shape[1]
    rows = []
    for g in set(group.tolist()) - {-1}:
        members = X[group == g]
        if len(members) >= 2:
            rows.extend(members - members.mean(axis=0))
    centred = np.array(rows)
    scatter = centred.T @ centred / len(centred)
    shrunk = (1 - GROUP_SHRINKAGE) * scatter + GROUP_SHRINKAGE * np.trace(scatter) / d * np.eye(d)
    return np.real(np.linalg.inv(sqrtm(shrunk)))


def test_the_whitening_is_the_shrunk_scatters_inverse_square_root() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)) @ np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.2]])
    group = np.repeat(np.arange(8), 5)
    group[:3] = -1  # ungrouped samples
    group[39] = 99  # a group of one
    np.testing.assert_allclose(group_whitening(X, group), _brute_force(X, group), atol=1e-10)


def test_too_few_grouped_samples_leave_the_metric_alone() -> None:
    X = np.arange(12.0).reshape(6, 2)
    assert group_whitening(X, np.array([0, 0, -1, 1, 2, -1])) is None  # two in groups of 2+
    assert group_whitening(X, np.full(6, -1)) is None
    assert group_whitening(np.zeros((4, 2)), np.zeros(4, dtype=np.int64)) is None  # no spread


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # one EM step
@pytest.mark.parametrize("seed", range(3))
def test_links_within_stretched_classes_start_kmeans_across_them(seed: int) -> None:
    """Two classes 4 apart along y, each stretched along x (sd 3): k-means in raw coordinates
    splits x. Six must-links within each class show that x is spread within a class; the
    start, and so the fit, follows them."""
    rng = np.random.default_rng(seed)
    n = 150
    X = np.column_stack([3.0 * rng.standard_normal(2 * n), rng.standard_normal(2 * n)])
    X[n:, 1] += 4.0
    y = np.repeat([0, 1], n)
    raw = KMeans(2, n_init=1, random_state=seed).fit_predict(X)
    assert adjusted_rand_score(y, raw) < 0.2
    pairs = np.concatenate(
        [rng.choice(n, (6, 2), replace=False), n + rng.choice(n, (6, 2), replace=False)]
    )
    model = PPC(2, covariance="full", random_state=seed, max_iter=1)
    model.fit(X, pairs=pairs, weights=np.full(len(pairs), np.inf))
    # After one EM step from the start: the start was already the class split.
    assert adjusted_rand_score(y, model.predict(X)) > 0.8
