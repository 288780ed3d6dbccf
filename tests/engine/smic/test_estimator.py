"""SMIC estimator: assignment oracles, invariances, interface, errors (spec smic.md Sec. 2, 5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score

from app.engine import SMIC
from app.engine.smic import spectral
from app.engine.smic.kernel import local_scaling_kernel, nearest_neighbors, normalize_symmetric
from app.engine.smic.spectral import assign, near_ties, top_eigenpairs
from benchmarks.toy_data import make_toy

FloatArray = NDArray[np.float64]


def _three_blobs(seed: int = 0) -> tuple[FloatArray, NDArray[np.intp]]:
    """Well separated blobs of distinct sizes 40/70/90 (no eigenvalue ties, spec 5.2 #8)."""
    rng = np.random.RandomState(seed)
    sizes = [40, 70, 90]
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])
    y = np.repeat(np.arange(3), sizes)
    return centres[y] + 0.6 * rng.standard_normal((200, 2)), y


def _labels_of(K: sp.csr_matrix | FloatArray, c: int, prior: FloatArray | None = None) -> NDArray:
    K = sp.csr_matrix(K)
    _, vecs = top_eigenpairs(K, c, "dense", np.ones(K.shape[0]))
    return assign(vecs, np.full(c, 1.0 / c) if prior is None else prior).labels


# ---------------------------------------------------------------- assignment oracles
def test_block_diagonal_kernel_is_recovered_exactly() -> None:
    sizes = [15, 25, 40]
    K = sp.block_diag([np.ones((s, s)) for s in sizes])
    truth = np.repeat(np.arange(3), sizes)
    perm = np.random.RandomState(0).permutation(80)
    labels = _labels_of(K.toarray()[np.ix_(perm, perm)], 3)
    assert adjusted_rand_score(truth[perm], labels) == 1.0


def test_blocks_beyond_c_are_unclaimed_and_go_to_cluster_zero() -> None:
    sizes = [40, 25, 10]
    K = sp.csr_matrix(sp.block_diag([np.ones((s, s)) for s in sizes]))
    _, vecs = top_eigenpairs(K, 2, "dense", np.ones(75))
    result = assign(vecs, np.array([0.5, 0.5]))
    np.testing.assert_array_equal(result.unclaimed, np.repeat([False, False, True], sizes))
    assert np.all(result.labels[result.unclaimed] == 0)
    assert np.all(result.posterior[result.unclaimed] == 0)


@pytest.mark.parametrize("prior", [[0.5, 0.5], [0.2, 0.8]])
def test_posterior_means_equal_the_prior(prior: list[float]) -> None:
    X, _ = make_toy("high_low_densities", 200, 0)
    model = SMIC(2, n_neighbors=6, class_prior=prior, random_state=0).fit(X)
    np.testing.assert_allclose(model.posterior_.mean(axis=0), np.sort(prior), rtol=1e-12)
    assert np.all(model.posterior_ >= 0)


def test_labels_ignore_eigenvector_signs_scale_and_diagonal_shift() -> None:
    X, _ = _three_blobs()
    model = SMIC(3, n_neighbors=6, standardize=False, eigen_solver="dense").fit(X)
    idx, dist = nearest_neighbors(X, 6)
    K = local_scaling_kernel(idx, dist, 6)
    base = _labels_of(K, 3)
    np.testing.assert_array_equal(base, model.labels_)
    _, vecs = top_eigenpairs(K, 3, "dense", np.ones(200))
    flipped = vecs * np.array([-1.0, 1.0, -1.0])
    np.testing.assert_array_equal(assign(flipped, np.full(3, 1 / 3)).labels, base)
    np.testing.assert_array_equal(_labels_of(K * 7.5, 3), base)
    np.testing.assert_array_equal(_labels_of(K + 2.0 * sp.identity(200), 3), base)
    np.testing.assert_array_equal(_labels_of(K - sp.identity(200), 3), base)  # K_ii = 0


def test_arpack_and_dense_solvers_agree() -> None:
    X, _ = make_toy("four_blobs", 200, 1)
    a = SMIC(4, n_neighbors=5, random_state=0).fit(X)
    b = SMIC(4, n_neighbors=5, eigen_solver="dense", random_state=0).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-9)
    assert np.all(np.diff(a.eigenvalues_) <= 0)


def _count_solves(monkeypatch: pytest.MonkeyPatch, restarts: int) -> dict[str, list[int]]:
    """Lower the multigrid threshold to 100 points and ARPACK's budget under 'auto' to
    `restarts`; record the size of every AMG-LOBPCG solve and of every budgeted ARPACK try."""
    monkeypatch.setattr(spectral, "AMG_MIN_POINTS", 100)
    monkeypatch.setattr(spectral, "ARPACK_AUTO_RESTARTS", restarts)
    sizes: dict[str, list[int]] = {"amg": [], "budgeted arpack": []}
    amg, arpack = spectral._amg_lobpcg, spectral._arpack

    def counted_amg(K: sp.csr_matrix, k: int, v0: FloatArray) -> tuple[FloatArray, FloatArray]:
        sizes["amg"].append(K.shape[0])
        return amg(K, k, v0)

    def counted_arpack(
        K: sp.csr_matrix, k: int, v0: FloatArray, budget: int | None
    ) -> tuple[FloatArray, FloatArray]:
        if budget is not None:
            sizes["budgeted arpack"].append(K.shape[0])
        return arpack(K, k, v0, budget)

    monkeypatch.setattr(spectral, "_amg_lobpcg", counted_amg)
    monkeypatch.setattr(spectral, "_arpack", counted_arpack)
    return sizes


@pytest.mark.parametrize(("toy", "t"), [("double_spirals", 6), ("high_low_densities", 4)])
def test_multigrid_lobpcg_matches_the_dense_spectrum_of_a_normalised_kernel(
    toy: str, t: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When ARPACK runs out of its budget on a large degree-normalised kernel, 'auto' solves it
    by AMG-preconditioned LOBPCG, which must give the dense solver's top eigenpairs."""
    sizes = _count_solves(monkeypatch, restarts=1)
    X, _ = make_toy(toy, 200, 0)
    idx, dist = nearest_neighbors(X, t)
    K = normalize_symmetric(local_scaling_kernel(idx, dist, t))  # connected: one solve
    v0 = np.random.RandomState(0).uniform(-1, 1, 200)
    crowding = spectral.Crowding()
    vals, vecs = top_eigenpairs(K, 3, "auto", v0, normalized=True, crowding=crowding)
    assert sizes == {"amg": [200], "budgeted arpack": [200]} and crowding.seen
    dense_vals, dense_vecs = top_eigenpairs(K, 3, "dense", v0)
    assert vals[0] == pytest.approx(1.0, abs=1e-10)  # D^1/2 1 has eigenvalue exactly 1
    np.testing.assert_allclose(vals, dense_vals, rtol=0, atol=1e-9)
    overlap = np.abs(np.sum(vecs * dense_vecs, axis=0))  # unit vectors, up to sign
    np.testing.assert_allclose(overlap, 1.0, atol=1e-6)
    assert np.all(np.diff(vals) <= 0)


def test_after_one_crowded_spectrum_the_fit_goes_to_multigrid_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes = _count_solves(monkeypatch, restarts=1)
    X, _ = make_toy("double_spirals", 200, 0)
    model = SMIC(2, normalize="symmetric", random_state=0).fit(X)
    connected = [t for t in model.lsmi_curve_ if t >= 5]  # t = 5..10 give one component
    assert len(connected) >= 2
    assert sizes["budgeted arpack"] == [200]  # tried once, at t = 5
    assert sizes["amg"] == [200] * len(connected)
    dense = SMIC(2, normalize="symmetric", eigen_solver="dense", random_state=0).fit(X)
    np.testing.assert_array_equal(model.labels_, dense.labels_)
    np.testing.assert_allclose(model.eigenvalues_, dense.eigenvalues_, atol=1e-9)


def test_arpack_within_its_budget_keeps_the_fit_off_multigrid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes = _count_solves(monkeypatch, restarts=spectral.ARPACK_AUTO_RESTARTS)
    X, _ = make_toy("double_spirals", 200, 0)
    auto = SMIC(2, normalize="symmetric", random_state=0).fit(X)
    assert sizes["amg"] == [] and len(sizes["budgeted arpack"]) >= 2
    arpack = SMIC(2, normalize="symmetric", eigen_solver="arpack", random_state=0).fit(X)
    np.testing.assert_array_equal(auto.labels_, arpack.labels_)
    assert auto.lsmi_curve_ == arpack.lsmi_curve_


def test_near_ties_detects_equal_eigenvalues() -> None:
    assert near_ties(np.array([3.0, 2.0, 1.0])).size == 0
    np.testing.assert_array_equal(near_ties(np.array([1.0, 1.0 - 1e-14, 0.5])), [0])


def test_disconnected_normalised_kernel_gives_its_components_without_a_tie_warning() -> None:
    # The degree-normalised kernel of a graph with c components has the eigenvalue 1 c times.
    # Solving per component makes each eigenvector an indicator of one component (A5), so the
    # labels are the components, not a solver-dependent rotation of them.
    X, y = _three_blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SMIC(3, n_neighbors=5, normalize="symmetric", random_state=0).fit(X)
    np.testing.assert_allclose(model.eigenvalues_, 1.0, rtol=1e-9)
    assert adjusted_rand_score(y, model.labels_) == 1.0


def test_a_tie_inside_one_component_still_warns() -> None:
    # Two equal blocks joined into one component by nothing but the diagonal are two
    # components; a ring is one component whose second eigenvalue is double (cos/sin modes).
    angles = 2 * np.pi * np.arange(60) / 60
    ring = np.column_stack([np.cos(angles), np.sin(angles)])
    with pytest.warns(UserWarning, match="tied"):
        SMIC(3, n_neighbors=2, normalize="none", standardize=False, random_state=0).fit(ring)


def test_componentwise_eigenpairs_match_the_dense_spectrum() -> None:
    # Oracle: K is block-diagonal, so its top eigenvalues are those of the whole dense matrix.
    rng = np.random.RandomState(3)
    blocks = []
    for size in (30, 12, 45, 7):
        A = rng.uniform(0.0, 1.0, (size, size))
        blocks.append((A + A.T) / 2)
    K = sp.csr_matrix(sp.block_diag(blocks))
    perm = rng.permutation(K.shape[0])
    K = sp.csr_matrix(K[perm][:, perm])
    vals, vecs = top_eigenpairs(K, 6, "arpack", np.ones(K.shape[0]))
    dense = np.linalg.eigvalsh(K.toarray())[::-1][:6]
    np.testing.assert_allclose(vals, dense, rtol=1e-9)
    np.testing.assert_allclose(K @ vecs, vecs * vals, atol=1e-8)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(6), atol=1e-8)


# ---------------------------------------------------------------- invariances
def test_labels_invariant_to_translation_rotation_uniform_scaling() -> None:
    X, y = _three_blobs(1)
    base = SMIC(3, n_neighbors=7, standardize=False, random_state=0).fit(X).labels_
    assert adjusted_rand_score(y, base) == 1.0
    angle = 0.7
    R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    moved = 3.5 * X @ R.T + np.array([10.0, -4.0])
    again = SMIC(3, n_neighbors=7, standardize=False, random_state=0).fit(moved).labels_
    np.testing.assert_array_equal(again, base)


def test_standardised_pipeline_invariant_to_per_feature_affine_maps() -> None:
    X, _ = make_toy("high_low_densities", 200, 3)
    a = SMIC(2, n_neighbors=5, random_state=0).fit(X)
    b = SMIC(2, n_neighbors=5, random_state=0).fit(X * np.array([100.0, 0.01]) + 5.0)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.smi_ == pytest.approx(b.smi_, abs=1e-9)


def test_permuting_samples_permutes_labels() -> None:
    X, _ = make_toy("four_blobs", 200, 2)
    perm = np.random.RandomState(5).permutation(200)
    a = SMIC(4, n_neighbors=5, normalize="none", eigen_solver="dense").fit(X).labels_
    b = SMIC(4, n_neighbors=5, normalize="none", eigen_solver="dense").fit(X[perm]).labels_
    np.testing.assert_array_equal(a[perm], b)


# ---------------------------------------------------------------- model selection
def test_auto_skips_graphs_with_more_components_than_clusters() -> None:
    X, y = make_toy("four_blobs", 200, 0)
    model = SMIC(4, normalize="none", random_state=0).fit(X)
    idx, dist = nearest_neighbors((X - X.mean(axis=0)) / X.std(axis=0), 10)
    few = [
        t for t in range(1, 11) if connected_components(local_scaling_kernel(idx, dist, t))[0] <= 4
    ]
    assert few != list(range(1, 11))  # t = 1 leaves many small components
    assert sorted(model.lsmi_curve_) == few
    best = max(model.lsmi_curve_.values())
    assert model.smi_ == best  # blobs: one clear winner, no near-tie
    single = SMIC(4, n_neighbors=model.n_neighbors_, normalize="none", random_state=0).fit(X)
    np.testing.assert_array_equal(single.labels_, model.labels_)
    assert single.smi_ == pytest.approx(model.smi_, abs=1e-12)  # common random numbers
    assert -0.5 <= model.smi_ <= (4 - 1) / 2 + 0.01  # SMI range, spec 5.2 #1-2
    assert adjusted_rand_score(y, model.labels_) == 1.0


@pytest.mark.filterwarnings("ignore:eigenvalues 1 and 2:UserWarning")
def test_same_random_state_same_result() -> None:
    X, _ = make_toy("circle_gaussian", 200, 0)
    a = SMIC(2, normalize="symmetric", random_state=3).fit(X)
    b = SMIC(2, normalize="symmetric", random_state=3).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.lsmi_curve_ == b.lsmi_curve_


def test_progress_called_per_candidate_and_stop_keeps_best_so_far() -> None:
    X, _ = make_toy("four_blobs", 200, 0)
    calls: list[tuple[int, float]] = []

    def record(iteration: int, cost: float) -> bool:
        calls.append((iteration, cost))
        return iteration < 3

    model = SMIC(4, normalize="none", random_state=0, progress=record).fit(X)
    assert [i for i, _ in calls] == [1, 2, 3]
    evaluated = sorted(model.lsmi_curve_)
    assert len(evaluated) == 3
    assert [cost for _, cost in calls] == [-model.lsmi_curve_[t] for t in evaluated]
    assert model.smi_ == max(model.lsmi_curve_.values())
    refit = SMIC(4, n_neighbors=model.n_neighbors_, normalize="none", random_state=0).fit(X)
    np.testing.assert_array_equal(refit.labels_, model.labels_)


def test_single_cluster() -> None:
    X, _ = make_toy("four_blobs", 200, 0)
    model = SMIC(1, n_neighbors=5, random_state=0).fit(X)
    assert np.all(model.labels_ == 0)
    assert abs(model.smi_) < 1e-3


def test_fit_predict_and_fitted_attributes() -> None:
    X, _ = make_toy("four_blobs", 200, 0)
    model = SMIC(4, n_neighbors=5, random_state=0)
    labels = model.fit_predict(X)
    np.testing.assert_array_equal(labels, model.labels_)
    assert model.n_features_in_ == 2 and model.n_neighbors_ == 5
    assert model.posterior_.shape == (200, 4) and model.eigenvalues_.shape == (4,)
    assert model.n_constraint_violations_ == 0
    assert model.get_params()["n_neighbors"] == 5


# ---------------------------------------------------------------- duplicates and errors
def test_iris_duplicate_row_skips_t1_in_auto_mode_without_nans() -> None:
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = SMIC(3, random_state=0).fit(X)
    for curve in model.lsmi_curves_.values():
        assert 1 not in curve and set(curve) <= set(range(2, 11))
    assert np.all(np.isfinite(model.posterior_))
    assert adjusted_rand_score(y, model.labels_) > 0.3  # prototype: 0.426 at t = 4
    with pytest.raises(ValueError, match=r"exact duplicate.*n_neighbors"):
        SMIC(3, n_neighbors=1).fit(X)


def test_all_candidates_with_zero_scale_raise() -> None:
    X = np.repeat(np.random.RandomState(0).standard_normal((4, 2)), 12, axis=0)
    with pytest.raises(ValueError, match="exact duplicate"):
        SMIC(2).fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_raises(bad: float) -> None:
    X = np.random.RandomState(0).standard_normal((20, 2))
    X[4, 1] = bad
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        SMIC(2).fit(X)


def test_too_many_clusters_raises() -> None:
    X = np.random.RandomState(0).standard_normal((5, 2))
    with pytest.raises(ValueError, match="n_clusters=6 is larger than the number of samples n=5"):
        SMIC(6).fit(X)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_neighbors": 0}, "n_neighbors=0"),
        ({"n_neighbors": 30}, "n_neighbors=30"),
        ({"n_neighbors": "many"}, "n_neighbors must be"),
        ({"normalize": "rw"}, "normalize must be"),
        ({"eigen_solver": "lobpcg"}, "eigen_solver must be"),
        ({"class_prior": [0.7, 0.7]}, "sum to 1"),
        ({"class_prior": [1.0]}, "class_prior must hold 2"),
        ({"gammas": []}, "gammas must be"),
        ({"n_folds": 1}, "n_folds"),
    ],
)
def test_bad_parameters_raise(params: dict[str, object], match: str) -> None:
    X = np.random.RandomState(0).standard_normal((20, 2))
    with pytest.raises(ValueError, match=match):
        SMIC(2, **params).fit(X)  # type: ignore[arg-type]
