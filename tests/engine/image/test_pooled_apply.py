"""Applying a CEC-family model to another image: the pooled covariance is the weighted mean of
the clusters' (brute force, every family) and the weights are equal; it carries to an image
where a class spreads more, or covers another share of the picture, and still segments one like
the fitted image."""

import copy

import numpy as np
import pytest

from app.engine import C4S, CEC, CECIB
from app.engine.image.pooled_apply import for_another_image

SIDE = 40  # a SIDE x SIDE image, left half class 0, right half class 1


def two_halves(spread_left: float, spread_right: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel features (row-major) and truth of an image whose left half is N((0, 0), s_l^2 I)
    and right half N((4, 0), s_r^2 I)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((SIDE, SIDE), dtype=np.int64)
    truth[:, SIDE // 2 :] = 1
    flat = truth.ravel()
    centres = np.where(flat[:, None] == 0, [0.0, 0.0], [4.0, 0.0])
    spreads = np.where(flat == 0, spread_left, spread_right)[:, None]
    return centres + spreads * rng.standard_normal((flat.size, 2)), flat


def source_model() -> CEC:
    x, truth = two_halves(0.15, 1.0, seed=0)
    model = CEC(n_clusters=2, covariance="full", random_state=0).fit(x)
    assert model.n_clusters_ == 2
    assert abs(np.corrcoef(model.labels_, truth)[0, 1]) > 0.95  # it found the two halves
    return model


def accuracy(labels: np.ndarray, truth: np.ndarray) -> float:
    return max(np.mean(labels == truth), np.mean(labels != truth))


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_pooled_covariance_is_the_weighted_mean_of_the_clusters(covariance: str) -> None:
    rng = np.random.default_rng(1)
    x = np.vstack([rng.normal(0, 0.3, (200, 3)), rng.normal(3, 1.5, (100, 3))])
    model = CEC(n_clusters=2, covariance=covariance, random_state=0).fit(x)
    pooled = for_another_image(model)
    expected = (
        sum(w * c for w, c in zip(model.weights_, model.covariances_, strict=True))
        / model.weights_.sum()
    )
    assert pooled.covariances_.shape == model.covariances_.shape
    for c in pooled.covariances_:
        np.testing.assert_allclose(c, expected)
    # The fitted model is untouched; the copy has its means, equal weights, and predicts.
    assert not np.allclose(model.covariances_[0], model.covariances_[1])
    assert not np.allclose(model.weights_, 0.5)
    np.testing.assert_array_equal(pooled.means_, model.means_)
    np.testing.assert_allclose(pooled.weights_, [0.5, 0.5])
    assert pooled.predict(x).shape == (x.shape[0],)


def test_a_class_that_spreads_on_the_new_image_is_segmented_better_pooled() -> None:
    model = source_model()
    # On the new image the tight class is four times as spread: the fitted (tight) covariance
    # hands its outer pixels to the broad class; the pooled one draws the line between the means.
    x, truth = two_halves(0.6, 1.0, seed=2)
    fitted_labels = model.predict(x)
    pooled_labels = for_another_image(model).predict(x)
    assert accuracy(pooled_labels, truth) > accuracy(fitted_labels, truth) + 0.05
    assert accuracy(pooled_labels, truth) > 0.95


def test_an_image_like_the_fitted_one_is_still_segmented() -> None:
    model = source_model()
    x, truth = two_halves(0.15, 1.0, seed=3)
    assert accuracy(for_another_image(model).predict(x), truth) > 0.95


@pytest.mark.parametrize("make", [CECIB, C4S])
def test_other_cec_family_models_pool_too(make: type) -> None:
    x, truth = two_halves(0.15, 1.0, seed=0)
    if make is CECIB:
        y = np.full(x.shape[0], -1)
        y[[0, 1, SIDE - 1]] = truth[[0, 1, SIDE - 1]]
        model = make(n_clusters=2, random_state=0).fit(x, y)
    else:
        model = make(n_clusters=2, random_state=0).fit(x, must_link=np.array([[0, 1]]))
    x2, truth2 = two_halves(0.6, 1.0, seed=2)
    labels = for_another_image(model).predict(x2)
    assert accuracy(labels, truth2) > accuracy(model.predict(x2), truth2)


def test_a_class_that_covers_more_of_the_new_image_is_not_held_to_its_old_share() -> None:
    """Fitted where class 1 covers a tenth of the picture, applied where it covers half: with
    the fitted shares the line between the classes moves toward class 1 and cuts into it; with
    equal weights it sits midway, where the new image's classes meet (equal spreads)."""
    rng = np.random.default_rng(4)
    x = np.vstack([rng.normal(0, 1, (900, 2)), rng.normal([3, 0], 1, (100, 2))])
    model = CEC(n_clusters=2, covariance="spherical", random_state=0).fit(x)
    assert model.n_clusters_ == 2 and model.weights_.min() < 0.15
    truth = np.repeat([0, 1], 500)
    x2 = np.vstack([rng.normal(0, 1, (500, 2)), rng.normal([3, 0], 1, (500, 2))])
    pooled = for_another_image(model)
    held = copy.copy(pooled)
    held.weights_ = model.weights_  # the fitted shares
    assert accuracy(pooled.predict(x2), truth) > accuracy(held.predict(x2), truth) + 0.04
    assert accuracy(pooled.predict(x2), truth) > 0.92
