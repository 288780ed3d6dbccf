"""EM with Gibbs E-steps stops once its parameters only wander within the sampler's noise."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from app.engine import PPC
from app.engine.ppc import estimator
from app.engine.ppc.stationary import DRIFT_WINDOW, DriftMonitor
from benchmarks.bench_constraints import draw_pairs, load


def _first_stationary(means: np.ndarray, weights: np.ndarray) -> int | None:
    """The first iteration at which the monitor calls the sequence stationary, else None."""
    monitor = DriftMonitor(scale=1.0)
    for t in range(means.shape[0]):
        if monitor.update(means[t], weights[t]):
            return t
    return None


def test_noise_around_a_fixed_point_is_stationary_after_one_window() -> None:
    rng = np.random.default_rng(0)
    means = 2.0 + 0.003 * rng.standard_normal((40, 3, 2))
    weights = np.full((40, 3), 1 / 3) + 0.001 * rng.standard_normal((40, 3))
    assert _first_stationary(means, weights) == DRIFT_WINDOW


def test_slow_steady_convergence_is_not_stationary() -> None:
    # Rate 0.99 per iteration: every step is tiny, but they all go the same way.
    t = np.arange(200, dtype=np.float64)
    means = (1.0 - 0.99**t)[:, None, None] * np.ones((1, 3, 2))
    weights = np.full((200, 3), 1 / 3)
    assert _first_stationary(means, weights) is None


def test_drift_then_noise_is_stationary_only_once_the_drift_is_gone() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(120, dtype=np.float64)
    drift = (1.0 - 0.9**t)[:, None, None] * np.ones((1, 2, 2))
    means = drift + 0.002 * rng.standard_normal((120, 2, 2))
    weights = np.full((120, 2), 0.5)
    first = _first_stationary(means, weights)
    assert first is not None
    # The drift over the window before `first` is within a few noise steps (0.9^t * ~1 per
    # window of 10 steps must have fallen to the noise, 0.002): not before t ~ 40.
    assert 40 <= first <= 80


def _iris_with_random_hard_pairs(n_pairs: int, seed: int) -> tuple[np.ndarray, ...]:
    """bench_constraints' iris row: standardised iris and one draw of hard pairs."""
    X, y = load("iris")
    must, cannot = draw_pairs(y, n_pairs, seed)
    pairs = np.concatenate([must, cannot])
    weights = np.concatenate([np.full(len(must), np.inf), np.full(len(cannot), -np.inf)])
    return X, pairs, weights


def test_a_gibbs_fit_at_its_noise_floor_converges_and_keeps_every_hard_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The draw of bench_constraints' iris-200 row that used to run all 200 EM iterations: the
    # tied mixture's versicolor/virginica boundary keeps the Gibbs marginals noisy. (Started in
    # the pairs' metric, this draw ends elsewhere; the plain k-means start keeps the case.)
    monkeypatch.setattr(estimator, "_whitening", lambda X, graph: None)
    X, pairs, weights = _iris_with_random_hard_pairs(200, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = PPC(3, covariance="tied", random_state=7).fit(X, pairs=pairs, weights=weights)
    assert model.converged_ and model.n_iter_ < 60
    labels = model.labels_
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    assert np.all(np.where(weights > 0, same, ~same))
    # Stopping early changes nothing but noise: running on (the drift rule off; 80 iterations
    # keep the test quick without the JIT) lands at the same mixture.
    monkeypatch.setattr(DriftMonitor, "update", lambda self, means, weights: False)
    with pytest.warns(ConvergenceWarning):
        long = PPC(3, covariance="tied", random_state=7, max_iter=80)
        long.fit(X, pairs=pairs, weights=weights)
    assert long.n_iter_ == 80
    order = np.argsort(model.means_[:, 0])
    long_order = np.argsort(long.means_[:, 0])
    np.testing.assert_allclose(model.means_[order], long.means_[long_order], atol=0.05)
    assert np.mean(model.labels_ == long.labels_) > 0.97
