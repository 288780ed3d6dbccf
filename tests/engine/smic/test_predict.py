"""SMIC.predict: the fitted posterior model at new points (spec smic.md Sec. 2.6)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from app.engine import SMIC

CENTRES = np.array([[0.0, 0.0], [7.0, 0.0], [0.0, 7.0]])


def _blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    return CENTRES[truth] + rng.normal(scale=0.8, size=(n, 2)), truth


@pytest.mark.parametrize("normalize", ["none", "symmetric"])
def test_predict_on_training_points_is_the_fit(normalize: str) -> None:
    """Oracle 12: a training point queried again gets its training kernel row (no constraints,
    duplicates or distance ties here), so its posterior and label are the fit's."""
    X, truth = _blobs(240, 0)
    model = SMIC(3, normalize=normalize, eigen_solver="dense", random_state=0).fit(X)
    assert adjusted_rand_score(truth, model.labels_) == 1.0
    np.testing.assert_allclose(model.predict_posterior(X), model.posterior_, atol=1e-9)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


@pytest.mark.parametrize("normalize", ["none", "symmetric"])
def test_held_out_points_get_their_blob(normalize: str) -> None:
    """Held-out points within 2.5 standard deviations of a centre get that blob's cluster. A
    point far out between two blobs (one at (3.0, 0.0) here) is scored by the eigenvector entries
    of its few neighbours, and the model can give it to the other blob."""
    X, truth = _blobs(400, 1)
    model = SMIC(3, normalize=normalize, random_state=0).fit(X[:300])
    assert adjusted_rand_score(truth[:300], model.labels_) == 1.0
    blob_label = {t: np.bincount(model.labels_[truth[:300] == t]).argmax() for t in range(3)}
    distance = np.linalg.norm(X[300:, None, :] - CENTRES[None], axis=2)
    typical = distance.min(axis=1) <= 2.5 * 0.8
    assert typical.sum() >= 90
    expected = np.array([blob_label[t] for t in distance.argmin(axis=1)])
    np.testing.assert_array_equal(model.predict(X[300:])[typical], expected[typical])


def test_feature_names_and_their_check() -> None:
    """scikit-learn reads names from dataframes only (through narwhals); this venv has no
    dataframe library, so the test runs where pandas is installed."""
    pd = pytest.importorskip("pandas")
    X, _ = _blobs(120, 2)
    model = SMIC(3, max_neighbors=5, random_state=0).fit(pd.DataFrame(X, columns=["a", "b"]))
    assert list(model.feature_names_in_) == ["a", "b"] and model.n_features_in_ == 2
    with pytest.warns(UserWarning, match="fitted with feature names"):
        model.predict(X[:5])


def test_n_features_in_is_checked() -> None:
    X, _ = _blobs(120, 2)
    model = SMIC(3, max_neighbors=5, random_state=0).fit(X)
    assert model.n_features_in_ == 2
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :1])


def test_a_far_point_is_unclaimed_and_goes_to_cluster_0() -> None:
    """Beyond every training scale a point's only kernel entries are with its t nearest points;
    with no positive score at all it goes to the lowest index, as unclaimed training points."""
    X, _ = _blobs(120, 3)
    model = SMIC(3, max_neighbors=5, random_state=0).fit(X)
    post = model.predict_posterior(np.array([[1e6, 1e6]]))
    assert post.shape == (1, 3) and np.all(post >= 0.0)
    assert model.predict(np.array([[1e6, 1e6]]))[0] == int(post.argmax())
