"""C4S and C3L expose their fitted Gaussians and predict new points by the CEC rule.

Oracles: the parameters are the maximum-likelihood moments of the fitted partition (NumPy), and
``predict`` is the arg-max of p_i f_i(x) computed with scipy.stats on the same parameters.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm
from sklearn.exceptions import NotFittedError

from app.engine import C3L, C4S
from app.engine.c3l.cost import constrained_fit, leakage_quantile
from app.engine.c3l.fit import SIDE_RIDGE

CENTRES = np.array([[0.0, 0.0], [7.0, 0.0], [0.0, 7.0], [7.0, 7.0]])


def _blobs(seed: int, n_per: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    X = np.vstack([rng.normal(c, 1.0, (n_per, 2)) for c in CENTRES])
    return X, np.repeat(np.arange(len(CENTRES)), n_per)


def _moments(X: np.ndarray, labels: np.ndarray, covariance: str) -> tuple[np.ndarray, ...]:
    k = labels.max() + 1
    weights = np.bincount(labels, minlength=k) / len(labels)
    means = np.array([X[labels == c].mean(axis=0) for c in range(k)])
    full = np.array([np.cov(X[labels == c].T, bias=True) for c in range(k)])
    if covariance == "full":
        return weights, means, full
    diag = np.diagonal(full, axis1=1, axis2=2)
    return weights, means, (diag if covariance == "diagonal" else diag.mean(axis=1))


def _log_density(x: np.ndarray, mean: np.ndarray, cov: np.ndarray, covariance: str) -> np.ndarray:
    if covariance == "full":
        matrix = cov
    elif covariance == "diagonal":
        matrix = np.diag(cov)
    else:
        matrix = float(cov) * np.eye(x.shape[1])
    return np.asarray(multivariate_normal(mean, matrix).logpdf(x))


def _grid() -> np.ndarray:
    """New points over and around the data."""
    return np.random.RandomState(99).uniform(-4.0, 11.0, size=(500, 2))


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_c4s_parameters_are_the_moments_of_its_gaussian_clusters(covariance: str) -> None:
    X, _ = _blobs(0)
    model = C4S(8, covariance=covariance, random_state=0).fit(
        X, must_link=[[0, 1], [80, 81]], cannot_link=[[0, 80]]
    )
    weights, means, covs = _moments(X, model.cluster_labels_, covariance)
    np.testing.assert_allclose(model.weights_, weights, rtol=1e-12)
    np.testing.assert_allclose(model.means_, means, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.covariances_, covs, rtol=1e-9, atol=1e-12)
    # every point's group is the group of its Gaussian cluster
    np.testing.assert_array_equal(model.cluster_groups_[model.cluster_labels_], model.labels_)


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_c4s_predict_is_the_cec_rule_mapped_to_groups(covariance: str) -> None:
    X, _ = _blobs(1)
    model = C4S(8, covariance=covariance, random_state=1).fit(
        X, must_link=[[0, 1]], cannot_link=[[0, 80], [80, 160]]
    )
    new = _grid()
    scores = np.column_stack(
        [
            np.log(w) + _log_density(new, m, c, covariance)
            for w, m, c in zip(model.weights_, model.means_, model.covariances_, strict=True)
        ]
    )
    expected = model.cluster_groups_[scores.argmax(axis=1)]
    np.testing.assert_array_equal(model.predict(new), expected)


def test_c4s_predict_puts_fresh_samples_with_their_blob() -> None:
    X, blob = _blobs(2)
    must = [[0, 1], [1, 2], [80, 81]]
    model = C4S(4, covariance="full", random_state=2).fit(X, must_link=must, cannot_link=[[0, 80]])
    fresh, fresh_blob = _blobs(3, n_per=25)
    predicted = model.predict(fresh)
    for b in range(len(CENTRES)):
        trained_group = np.bincount(model.labels_[blob == b]).argmax()
        assert np.mean(predicted[fresh_blob == b] == trained_group) >= 0.95


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_c3l_parameters_are_the_moments_and_the_constrained_side_fit(covariance: str) -> None:
    X, _ = _blobs(4)
    scores = X[:, 0] - 3.5 + np.random.RandomState(4).normal(scale=0.5, size=len(X))
    leakage = 0.05
    model = C3L(6, leakage=leakage, covariance=covariance, random_state=4).fit(
        X, side_scores=scores
    )
    weights, means, covs = _moments(X, model.labels_, covariance)
    np.testing.assert_allclose(model.weights_, weights, rtol=1e-12)
    np.testing.assert_allclose(model.means_, means, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.covariances_, covs, rtol=1e-9, atol=1e-12)
    ridge = SIDE_RIDGE * scores.var()
    q = leakage_quantile(leakage)
    for c in range(model.n_clusters_):
        member = scores[model.labels_ == c]
        mu, s = constrained_fit(member.mean(), member.var() + ridge, q)
        assert model.side_means_[c] == pytest.approx(mu, rel=1e-9, abs=1e-12)
        assert model.side_stds_[c] == pytest.approx(s, rel=1e-9)
        # the side factor puts at most `leakage` of its mass across the boundary
        assert norm.cdf(-abs(mu) / s) <= leakage + 1e-12


@pytest.mark.parametrize("covariance", ["full", "spherical"])
def test_c3l_predict_is_the_product_family_cec_rule(covariance: str) -> None:
    X, _ = _blobs(5)
    scores = X[:, 1] - 3.5
    model = C3L(6, covariance=covariance, random_state=5).fit(X, side_scores=scores)
    new = _grid()
    new_scores = new[:, 1] - 3.5
    columns = []
    for c in range(model.n_clusters_):
        x_part = _log_density(new, model.means_[c], model.covariances_[c], covariance)
        side = norm(model.side_means_[c], model.side_stds_[c]).logpdf(new_scores)
        columns.append(np.log(model.weights_[c]) + x_part + side)
    expected = np.column_stack(columns).argmax(axis=1)
    np.testing.assert_array_equal(model.predict(new, side_scores=new_scores), expected)


def test_predict_errors_are_clear() -> None:
    X, _ = _blobs(6)
    with pytest.raises(NotFittedError):
        C4S(4).predict(X)
    with pytest.raises(NotFittedError):
        C3L(4).predict(X, side_scores=X[:, 0])
    c4s = C4S(4, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        c4s.predict(np.ones((3, 5)))
    c3l = C3L(4, random_state=0).fit(X, side_scores=X[:, 0] - 3.5)
    with pytest.raises(ValueError, match="one score per sample"):
        c3l.predict(X, side_scores=X[:10, 0])
    with pytest.raises(ValueError, match="finite"):
        c3l.predict(X[:2], side_scores=[0.0, np.nan])
