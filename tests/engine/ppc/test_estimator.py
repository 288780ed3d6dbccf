"""PPC as an estimator: input validation, hard relations in labels_, progress, warnings,
grid links."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from app.engine import PPC, grid_links, grid_neighbour_pairs

Array = NDArray[np.float64]


def blobs(n_per: int = 30, seed: int = 0, d: int = 2, k: int = 3) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(k, d))
    X = np.concatenate([rng.normal(c, 1.0, size=(n_per, d)) for c in centres])
    return X, np.repeat(np.arange(k), n_per)


# -- bad input ------------------------------------------------------------------------------

X0, _ = blobs()


@pytest.mark.parametrize(
    ("pairs", "weights", "match"),
    [
        ([[0, 1], [2, 90]], [1.0, 1.0], r"pair 1 \(2, 90\) is out of range"),
        ([[0, 1], [-1, 3]], [1.0, 1.0], r"pair 1 \(-1, 3\) is out of range"),
        ([[0, 1], [4, 4]], [1.0, 1.0], r"pair 1 \(4, 4\) relates a sample to itself"),
        ([[0, 1], [2, 3]], [1.0, np.nan], r"weight of pair 1 \(2, 3\) is NaN"),
        ([[0, 1], [2, 3]], [1.0], r"pair 1 \(2, 3\) has no weight"),
        ([[0, 1]], [1.0, 2.0], r"weight 1 \(2.0\) has no pair"),
        (
            [[0, 1], [5, 7], [7, 5]],
            [0.5, np.inf, -np.inf],
            r"pair 2 \(7, 5\) is a hard do-not-link, but pair 1 \(5, 7\) is a hard link",
        ),
        (
            [[0, 1], [1, 2], [2, 3], [3, 0]],
            [np.inf, np.inf, np.inf, -np.inf],
            r"pair 3 \(3, 0\) is a hard do-not-link, but a chain of hard links joins its "
            r"samples: 0 - 1 - 2 - 3",
        ),
        ([[0, 1, 2]], [1.0], r"\(m, 2\)"),
        ([[0.5, 1]], [1.0], "integer"),
    ],
)
def test_bad_relations_raise_and_name_the_pair(pairs: object, weights: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PPC(3).fit(X0, pairs=pairs, weights=weights)


def test_infeasible_hard_do_not_links_raise() -> None:
    triangle = np.array([[0, 1], [1, 2], [2, 0]])
    with pytest.raises(ValueError, match=r"cannot all hold with n_components=2"):
        PPC(2).fit(X0, pairs=triangle, weights=np.full(3, -np.inf))
    with pytest.raises(ValueError, match=r"pair \(0, 1\) is a hard do-not-link.*n_components=1"):
        PPC(1).fit(X0, pairs=triangle[:1], weights=[-np.inf])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_components": 0}, "n_components"),
        ({"covariance": "banana"}, "covariance"),
        ({"e_step": "bp"}, "e_step"),
        ({"n_init": 0}, "n_init"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": -1.0}, "tol"),
        ({"pi_update": "magic"}, "pi_update"),
        ({"mf_damping": 0.0}, "mf_damping"),
        ({"progress": 3}, "progress"),
        ({"means_init": np.zeros((2, 2))}, "means_init"),
    ],
)
def test_bad_parameters_raise(params: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PPC(**{"n_components": 3, **params}).fit(X0)  # type: ignore[arg-type]


def test_weights_without_pairs_and_exact_refusal() -> None:
    with pytest.raises(ValueError, match="together"):
        PPC(2).fit(X0, pairs=None, weights=[1.0])
    pairs, w = grid_links(6, 5, 0.5)
    with pytest.raises(ValueError, match="e_step='exact'"):
        PPC(3, e_step="exact").fit(X0, pairs=pairs, weights=w)
    with pytest.raises(ValueError, match="hard do-not-links"):
        PPC(3, e_step="mean_field").fit(X0, pairs=[[0, 1]], weights=[-np.inf])
    with pytest.raises(ValueError, match="pi_update='fixed'"):
        PPC(3, pi_update="optimize", max_exact_states=100).fit(X0, pairs=pairs, weights=w)


# -- hard relations are never violated ------------------------------------------------------


def hard_relations(
    truth: NDArray[np.int64], rng: np.random.Generator, n_rel: int, soft: int
) -> tuple[NDArray[np.int64], Array]:
    n = truth.shape[0]
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(n_rel + soft)])
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    w = np.where(same, np.inf, -np.inf)
    w[n_rel:] = rng.normal(scale=1.0, size=soft)  # soft relations on top, any sign
    return pairs, w


@pytest.mark.parametrize("seed", range(8))
def test_hard_relations_hold_in_labels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X, truth = blobs(20, seed=seed)
    pairs, w = hard_relations(truth, rng, int(rng.integers(5, 40)), int(rng.integers(0, 20)))
    e_step = ["auto", "gibbs"][seed % 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = PPC(
            3,
            e_step=e_step,
            random_state=seed,
            max_iter=30,
            gibbs_sweeps=20,
            gibbs_burn_in=5,
            tol=1e-4,
        ).fit(X, pairs=pairs, weights=w)
    lab = model.labels_
    links, dnl = pairs[w == np.inf], pairs[w == -np.inf]
    assert np.all(lab[links[:, 0]] == lab[links[:, 1]])
    assert np.all(lab[dnl[:, 0]] != lab[dnl[:, 1]])
    assert np.all(np.isfinite(model.resp_))


def test_hard_do_not_links_hold_in_a_large_component() -> None:
    """A component too large to enumerate with hard do-not-links goes to Gibbs under auto."""
    rng = np.random.default_rng(3)
    X, truth = blobs(40, seed=3)
    pairs, w = hard_relations(truth, rng, 150, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = PPC(
            3, random_state=0, max_iter=10, max_exact_states=3**8, gibbs_sweeps=20, gibbs_burn_in=5
        ).fit(X, pairs=pairs, weights=w)
    lab = model.labels_
    ok = np.where(w == np.inf, lab[pairs[:, 0]] == lab[pairs[:, 1]], True)
    ok &= np.where(w == -np.inf, lab[pairs[:, 0]] != lab[pairs[:, 1]], True)
    assert ok.all()


# -- interface ------------------------------------------------------------------------------


def test_fit_attributes_and_reproducibility() -> None:
    X, _ = blobs(30)
    pairs = np.array([[0, 1], [30, 31], [0, 30], [60, 61]])
    w = np.array([1.0, np.inf, -1.0, -np.inf])
    model = PPC(3, n_init=3, random_state=5).fit(X, pairs=pairs, weights=w)
    again = clone(model).fit(X, pairs=pairs, weights=w)
    np.testing.assert_array_equal(model.labels_, again.labels_)
    np.testing.assert_allclose(model.means_, again.means_)
    assert model.means_.shape == (3, 2) and model.covariances_.shape == (3, 2, 2)
    assert model.weights_.sum() == pytest.approx(1.0)
    assert model.converged_ and 1 <= model.n_iter_ <= 200
    assert model.lower_bound_ == pytest.approx(model.lower_bound_history_[-1], abs=1e-5)
    np.testing.assert_allclose(model.resp_.sum(axis=1), 1.0)
    assert model.fit_predict(X, pairs=pairs, weights=w).shape == (90,)
    assert model.predict(X).shape == (90,)


@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
def test_other_families(covariance: str) -> None:
    X, _ = blobs(30, d=3)
    pairs, w = grid_links(9, 10, 0.3)
    model = PPC(3, covariance=covariance, random_state=0).fit(X, pairs=pairs, weights=w)
    expected = (3, 3) if covariance == "diagonal" else (3,)
    assert model.covariances_.shape == expected
    assert model.predict_proba(X).shape == (90, 3)


def test_progress_cancels_with_a_consistent_state() -> None:
    X, _ = blobs(30)
    calls: list[tuple[int, float]] = []

    def progress(iteration: int, cost: float) -> bool:
        calls.append((iteration, cost))
        return iteration < 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a cancelled fit does not warn
        model = PPC(3, n_init=4, random_state=0, progress=progress).fit(
            X, pairs=[[0, 1]], weights=[2.0]
        )
    assert [c[0] for c in calls] == [1, 2]
    assert model.n_iter_ == 2 and not model.converged_
    assert np.all(np.isfinite([c[1] for c in calls]))
    np.testing.assert_array_equal(model.labels_, model.resp_.argmax(axis=1))
    assert model.predict(X).shape == (90,)


def test_progress_is_called_every_iteration_over_restarts() -> None:
    X, _ = blobs(30)
    seen: list[int] = []
    PPC(3, n_init=2, random_state=0, progress=lambda i, c: seen.append(i) is None).fit(X)
    assert seen == list(range(1, len(seen) + 1)) and len(seen) >= 2


def test_convergence_warning() -> None:
    X, _ = blobs(30)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        PPC(3, max_iter=1, random_state=0).fit(X)


def test_grid_links() -> None:
    pairs, w = grid_links(3, 4, 0.7)
    assert pairs.shape == (3 * 3 + 4 * 2, 2) and np.all(w == 0.7)
    assert {tuple(p) for p in pairs.tolist()} >= {(0, 1), (0, 4), (7, 11)}
    eight = grid_neighbour_pairs(3, 4, connectivity=8)
    assert eight.shape[0] == 17 + 2 * 2 * 3
    assert {tuple(p) for p in eight.tolist()} >= {(0, 5), (1, 4)}
    assert np.all(eight[:, 0] != eight[:, 1])
    with pytest.raises(ValueError, match="connectivity"):
        grid_neighbour_pairs(3, 3, connectivity=6)


def test_mean_field_on_a_grid_smooths_a_noisy_image() -> None:
    """Two halves of a 16 x 16 grid with strong noise: links make the segmentation cleaner."""
    rng = np.random.default_rng(0)
    truth = np.zeros((16, 16), dtype=np.int64)
    truth[:, 8:] = 1
    X = truth.reshape(-1, 1) * 1.6 + rng.normal(size=(256, 1))
    pairs, w = grid_links(16, 16, 0.8)
    gmm = PPC(2, random_state=0, n_init=4).fit(X)
    ppc = PPC(2, random_state=0, n_init=4).fit(X, pairs=pairs, weights=w)

    def accuracy(lab: NDArray[np.int64]) -> float:
        agree = float(np.mean(lab == truth.ravel()))
        return max(agree, 1 - agree)

    assert accuracy(ppc.labels_) > accuracy(gmm.labels_) + 0.1
    assert accuracy(ppc.labels_) > 0.9
