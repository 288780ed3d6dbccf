"""A wide table's two-read randomized PCA against the exact decomposition (scikit-learn's full
SVD) on tables with more rows than the sketch has columns, where the result is not exact by
construction: the leading axes, the variance the components keep, and the rows' scores."""

from collections.abc import Iterator

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.decomposition import PCA

from app.services.ingest import wide_pca
from app.services.ingest.wide_pca import FirstProduct, two_pass_pca


def cells(n: int, d: int, types: int = 6, offset: float = 0.0) -> NDArray[np.float64]:
    """Single cells in miniature: a gamma profile per type over the genes, Poisson counts."""
    rng = np.random.default_rng(1)
    profiles = rng.gamma(0.6, 2.0, size=(types, d))
    return rng.poisson(profiles[rng.integers(0, types, size=n)]).astype(np.float64) + offset


def decompose(X: NDArray[np.float64], k: int, block: int = 700) -> wide_pca.WidePca:
    first = FirstProduct(X.shape[1], k + wide_pca.OVERSAMPLE)
    for start in range(0, len(X), block):
        first.add(X[start : start + block])
    mean = X.mean(axis=0)

    def centred() -> Iterator[NDArray[np.float64]]:
        for start in range(0, len(X), block):
            yield X[start : start + block] - mean

    return two_pass_pca(first, centred, k)


@pytest.mark.parametrize("offset", [0.0, 1e6], ids=["counts", "far-from-zero"])
def test_the_leading_axes_and_scores_are_scikit_learns(offset: float) -> None:
    X = cells(3_000, 1_200, offset=offset)
    k = 20
    found = decompose(X, k)
    exact = PCA(n_components=k, svd_solver="full").fit(X)
    axes = exact.components_.T * np.sign(
        exact.components_.T[np.argmax(np.abs(exact.components_.T), axis=0), np.arange(k)]
    )
    # The axes that carry the types (five of them) to within a thousandth of a radian.
    cosines = np.abs(np.sum(found.components[:, :5] * axes[:, :5], axis=0))
    assert np.all(np.arccos(np.minimum(cosines, 1.0)) < 1e-3), cosines
    # Signs as scikit-learn's: each axis's largest loading positive.
    top = found.components[np.argmax(np.abs(found.components), axis=0), np.arange(k)]
    assert np.all(top > 0)
    # The k components keep nearly what the exact k keep.
    centred = X - X.mean(axis=0)
    total = np.square(centred).sum()
    kept = np.square(centred @ found.components).sum() / total
    best = exact.explained_variance_ratio_.sum()
    assert best - 0.01 < kept <= best + 1e-12, (kept, best)
    # The scores are the rows' coordinates on the axes (the view: within 0.5% of its extent).
    assert found.scores is not None
    scores = np.concatenate(found.scores)
    view = centred @ found.components[:, :2]
    assert np.abs(scores[:, :2] - view).max() < 0.005 * np.abs(view).max()


def test_a_table_of_low_rank_gets_zeros_past_it_and_constant_columns_give_zeros() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 3)) @ rng.normal(size=(3, 400))  # rank 3
    found = decompose(X, 10)
    assert np.count_nonzero(np.abs(found.components).sum(axis=0)) == 3
    np.testing.assert_allclose(found.components[:, 3:], 0.0)
    reference = PCA(n_components=3, svd_solver="full").fit_transform(X)
    got = np.concatenate(found.scores or [])[:, :3]
    np.testing.assert_allclose(np.abs(got), np.abs(reference), atol=1e-6 * np.abs(reference).max())

    constant = decompose(np.full((300, 400), 7.0), 5)
    np.testing.assert_array_equal(constant.components, 0.0)
    assert constant.scores is not None
    np.testing.assert_array_equal(np.concatenate(constant.scores), 0.0)


def test_scores_too_large_to_keep_are_left_to_a_read_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wide_pca, "KEEP_SCORES_BYTES", 0)
    found = decompose(cells(800, 300), 5)
    assert found.scores is None and found.components.shape == (300, 5)
