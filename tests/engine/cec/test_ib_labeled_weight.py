"""CEC-IB's `labeled_weight`: counting each labeled point w times is the same fit as repeating
it w times (labels, energy by the brute-force cost of eq. 10), and bad weights are refused."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from app.engine import CECIB
from app.engine.core.cost import cec_ib_energy


def three_blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(c, 0.8, (60, 2)) for c in ((0, 0), (4, 0), (2, 3.5))])
    y = np.full(x.shape[0], -1)
    y[[0, 1, 2]] = 0
    y[[60, 61]] = 1
    y[[120, 121, 122, 123]] = 2
    return x, y


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_a_weight_is_the_same_fit_as_repeating_the_labeled_points(covariance: str) -> None:
    x, y = three_blobs()
    weighted = CECIB(
        n_clusters=3, labeled_weight=4, covariance=covariance, n_init=2, random_state=0
    ).fit(x, y)
    labeled = np.flatnonzero(y >= 0)
    rows = np.concatenate([np.arange(len(y)), np.repeat(labeled, 3)])
    repeated = CECIB(n_clusters=3, covariance=covariance, n_init=2, random_state=0).fit(
        x[rows], y[rows]
    )
    assert weighted.labels_.shape == (len(y),)
    np.testing.assert_array_equal(weighted.labels_, repeated.labels_[: len(y)])
    assert weighted.energy_ == pytest.approx(repeated.energy_)
    full_labels = np.concatenate([weighted.labels_, weighted.labels_[labeled].repeat(3)])
    # (the repeated rows are grouped per point: rows[len(y):] is labeled.repeat(3))
    assert weighted.energy_ == pytest.approx(
        cec_ib_energy(x[rows], full_labels, y[rows], 1.0, covariance), rel=1e-9
    )


def test_weight_one_is_the_plain_fit() -> None:
    x, y = three_blobs(1)
    plain = CECIB(n_clusters=3, random_state=0).fit(x, y)
    one = CECIB(n_clusters=3, labeled_weight=1, random_state=0).fit(x, y)
    np.testing.assert_array_equal(plain.labels_, one.labels_)
    assert plain.energy_ == one.energy_


@pytest.mark.parametrize("weight", [0, -2, 1.5, True, "10"])
def test_a_weight_must_be_a_positive_integer(weight: object) -> None:
    x, y = three_blobs()
    with pytest.raises(ValueError, match="labeled_weight"):
        CECIB(n_clusters=3, labeled_weight=weight).fit(x, y)  # type: ignore[arg-type]


def test_labels_are_still_checked_against_the_data() -> None:
    x, y = three_blobs()
    with pytest.raises(ValueError, match="labels but X has"):
        CECIB(n_clusters=3, labeled_weight=3).fit(x, y[:-1])


@pytest.mark.parametrize("weight", [3, "auto"])
def test_a_weighted_fits_warning_points_at_the_callers_line(weight: object) -> None:
    rng = np.random.RandomState(0)
    x = rng.normal(size=(120, 2)) + np.repeat([[0.0, 0.0], [6.0, 0.0]], 60, 0)
    y = np.full(120, -1)
    y[[0, 1, 2, 3]], y[[60, 61, 62, 63]] = 0, 1
    model = CECIB(n_clusters=6, labeled_weight=weight, max_iter=1, n_init=1, random_state=0)  # type: ignore[arg-type]
    with pytest.warns(ConvergenceWarning, match="CECIB did not converge") as record:
        model.fit(x, y)
    assert [w.filename for w in record if w.category is ConvergenceWarning] == [__file__]
