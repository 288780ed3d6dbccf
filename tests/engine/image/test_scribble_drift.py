"""ScribbleFaithfulFit: a component pulled off its scribbles is refitted with the scribbles
carrying the M-step (app/engine/image/scribble_drift.py)."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis

from app.engine import PPC
from app.engine.image.scribble_drift import (
    DRIFT_LIMIT,
    FALLBACK_SHARE,
    ScribbleFaithfulFit,
    pooled_covariance,
    scribble_drift,
)


def ringed(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A large class 0, a small class 1 scribbled in its core, and an unscribbled appearance
    (the 'ring') beside class 1 that draws class 1's component onto itself under EM."""
    rng = np.random.default_rng(seed)
    x = np.vstack(
        [
            rng.normal([0, 0], 1.0, (3000, 2)),
            rng.normal([6, 0], 1.0, (100, 2)),
            rng.normal([6, 6], 1.0, (900, 2)),
        ]
    )
    labels = np.full(x.shape[0], -1)
    labels[:30] = 0
    labels[3000:3015] = 1
    return x, labels


def make(unlabeled_weight: float) -> PPC:
    return PPC(n_components=2, covariance="tied", unlabeled_weight=unlabeled_weight, random_state=0)


def test_pooled_covariance_of_every_shape_is_the_weighted_mean() -> None:
    weights = np.array([1.0, 3.0])
    full = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 0.0], [0.0, 3.0]]])
    expected = 0.25 * full[0] + 0.75 * full[1]
    np.testing.assert_allclose(pooled_covariance(full, weights, 2), expected)
    diagonal = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(pooled_covariance(diagonal, weights, 2), np.diag([1.25, 2.5]))
    np.testing.assert_allclose(
        pooled_covariance(np.array([2.0, 1.0]), weights, 3), 1.25 * np.eye(3)
    )


def test_drift_is_the_largest_mahalanobis_gap_to_the_scribbled_mean() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 3))
    labels = np.full(40, -1)
    labels[:5], labels[10:20] = 0, 2
    covariances = np.stack([np.diag([1.0, 2.0, 0.5])] * 3)
    fitted = SimpleNamespace(
        means_=rng.normal(size=(3, 3)), covariances_=covariances, weights_=np.ones(3) / 3
    )
    precision = np.linalg.inv(covariances[0])
    expected = max(
        mahalanobis(fitted.means_[c], x[labels == c].mean(axis=0), precision) for c in (0, 2)
    )
    assert scribble_drift(x, labels, fitted) == pytest.approx(expected)
    assert scribble_drift(x, np.full(40, -1), fitted) == 0.0


def test_a_component_pulled_off_its_scribbles_is_refitted_on_them() -> None:
    x, labels = ringed()
    first = make(0.1).fit(x, labels=labels)
    assert scribble_drift(x, labels, first) > DRIFT_LIMIT  # the ring took component 1

    chooser = ScribbleFaithfulFit(make, 0.1).fit(x, labels=labels)

    weight = FALLBACK_SHARE * 45 / (x.shape[0] - 45)
    kept = chooser.best_estimator_
    assert kept.unlabeled_weight == pytest.approx(weight)
    assert chooser.choice_["unlabeled_weight"] == pytest.approx(weight)
    drifts = chooser.choice_["scribble_drift"]
    assert list(drifts) == ["0.1", f"{weight:.3g}"]
    assert drifts["0.1"] > DRIFT_LIMIT > drifts[f"{weight:.3g}"]
    # The components sit on their scribbles again: class 1 near (6, 0), not in the ring.
    np.testing.assert_allclose(kept.means_[1], x[labels == 1].mean(axis=0), atol=0.3)
    np.testing.assert_array_equal(chooser.labels_, kept.labels_)
    assert np.mean(chooser.labels_[3000:3100] == 1) > 0.9


def test_scribbles_that_keep_their_components_keep_the_first_fit() -> None:
    x, labels = ringed()
    labels[3100:3130] = 1  # the ring scribbled as class 1 too: nothing unscribbled pulls
    chooser = ScribbleFaithfulFit(make, 0.1).fit(x, labels=labels)
    assert chooser.best_estimator_.unlabeled_weight == 0.1
    assert list(chooser.choice_["scribble_drift"]) == ["0.1"]
    assert chooser.choice_["scribble_drift"]["0.1"] <= DRIFT_LIMIT


def test_without_scribbles_one_plain_fit() -> None:
    x, _ = ringed()
    chooser = ScribbleFaithfulFit(make, 0.1).fit(x)
    reference = make(0.1).fit(x)
    np.testing.assert_array_equal(chooser.labels_, reference.labels_)
    assert chooser.choice_["scribble_drift"] == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unlabeled_weight": 0.0}, "unlabeled_weight"),
        ({"unlabeled_weight": 0.1, "limit": 0.0}, "limit"),
        ({"unlabeled_weight": 0.1, "share": 1.0}, "share"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScribbleFaithfulFit(make, **kwargs)
