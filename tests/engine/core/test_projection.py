"""Singular X: CEC and CEC-IB cluster the leading principal components (docs/cec-ib.md)."""

import numpy as np
import pytest

from app.engine import C3L, CEC, CECIB
from app.engine.core.projection import MAX_COMPONENTS


def _blobs(seed: int, d: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(3, d))
    return np.repeat(centres, 40, axis=0) + rng.normal(size=(120, d))


def test_a_constant_feature_changes_neither_partition_nor_energy() -> None:
    """Dropping a constant column and rotating onto principal axes keep every distance and
    determinant, so the fit equals the fit without the column (no rotation of volume)."""
    X = _blobs(0)
    y = np.where(np.arange(120) % 6 == 0, np.arange(120) // 40, -1)
    padded = np.c_[X[:, :1], np.full(120, 7.0), X[:, 1:]]
    for model, fit_y in ((CEC(5, n_init=3, random_state=1), None), (CECIB(3, random_state=1), y)):
        plain = type(model)(**model.get_params()).fit(X, fit_y)
        with pytest.warns(UserWarning, match="singular"):
            wide = model.fit(padded, fit_y)
        assert wide.projection_ is not None and wide.projection_.n_components_ == 3
        assert plain.projection_ is None
        np.testing.assert_array_equal(wide.labels_, plain.labels_)
        assert wide.energy_ == pytest.approx(plain.energy_, rel=1e-9)
        np.testing.assert_array_equal(wide.predict(padded), wide.labels_)
        assert "singular" in wide.fit_warnings_[0]


def test_dependent_features_are_reduced_to_their_rank() -> None:
    X = np.c_[np.arange(10.0), 2 * np.arange(10.0)]  # rank one
    with pytest.warns(UserWarning, match="1 leading principal"):
        model = CEC(2, random_state=0).fit(X)
    assert model.means_.shape[1] == 1
    assert model.predict(X).shape == (10,)


def test_at_most_max_components_are_kept() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 12))
    X[:, 11] = X[:, 0] + X[:, 1]  # rank 11
    with pytest.warns(UserWarning):
        model = CEC(2, n_init=1, random_state=0).fit(X)
    assert model.projection_.n_components_ == MAX_COMPONENTS


def test_identical_points_are_still_a_clear_error() -> None:
    with pytest.raises(ValueError, match="same point"):
        CEC(2).fit(np.ones((10, 3)))


def test_c3l_clusters_singular_data_in_the_same_way() -> None:
    X = _blobs(2)
    scores = X[:, 0] - np.median(X[:, 0])
    padded = np.c_[X, np.zeros(120)]
    plain = C3L(3, n_init=2, random_state=0).fit(X, side_scores=scores)
    with pytest.warns(UserWarning, match="singular"):
        wide = C3L(3, n_init=2, random_state=0).fit(padded, side_scores=scores)
    np.testing.assert_array_equal(wide.labels_, plain.labels_)
    np.testing.assert_array_equal(
        wide.predict(padded, side_scores=scores), plain.predict(X, side_scores=scores)
    )
