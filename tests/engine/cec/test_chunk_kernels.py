"""Oracles for what one chunk does in a data-parallel pass (app/engine/cec/chunked).

``assign_chunk`` against the brute-force argmin of the documented cost, computed with scipy's
Gaussian log-density; ``accumulate_chunk`` + ``Totals.moments`` against numpy's weighted mean
and MLE covariance; ``cluster_totals.energy`` and ``polish_chunk``'s statistics against the
from-scratch cost ``cec_ib_energy``. Inputs are tiny, so these also run quickly with
NUMBA_DISABLE_JIT=1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from app.engine.cec.chunked.chunk_kernels import (
    accumulate_chunk,
    assign_chunk,
    pass_rows,
    polish_chunk,
)
from app.engine.cec.chunked.cluster_totals import (
    Frozen,
    Totals,
    energy,
    freeze,
    polish_state,
    precision,
)
from app.engine.core.cost import cec_ib_energy
from app.engine.core.families import DIAGONAL, FAMILIES, FULL

COVARIANCES = ["full", "diagonal", "spherical"]


def _random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return a @ a.T + 0.5 * np.eye(d)


def _family_cov(cov: np.ndarray, covariance: str) -> np.ndarray:
    """The covariance the family actually uses (what scipy should see)."""
    d = cov.shape[0]
    if covariance == "full":
        return cov
    if covariance == "diagonal":
        return np.diag(np.diag(cov))
    return np.trace(cov) / d * np.eye(d)


def _blobs(sizes: list[int], d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts = [
        rng.normal(size=(s, d)) @ _random_spd(rng, d) * 0.5 + 5.0 * i for i, s in enumerate(sizes)
    ]
    return np.vstack(parts), np.repeat(np.arange(len(sizes)), sizes)


def _categories(truth: np.ndarray, seed: int, share: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(truth.shape[0]) < share, truth % 3, -1).astype(np.int64)


def _brute_cost(
    X: np.ndarray,
    categories: np.ndarray,
    weights: np.ndarray,
    means: np.ndarray,
    covs: list[np.ndarray],
    label_cost: np.ndarray,
) -> np.ndarray:
    """cost[i, c] = -ln p_c - ln N(x_i; m_c, S_c) + label_cost[c, z_i] (z_i >= 0 only)."""
    cost = np.column_stack(
        [
            -math.log(w) - multivariate_normal(mean=m, cov=s).logpdf(X)
            for w, m, s in zip(weights, means, covs, strict=True)
        ]
    )
    labeled = categories >= 0
    cost[labeled] += label_cost[:, categories[labeled]].T
    return cost


def _assign(X: np.ndarray, categories: np.ndarray, frozen: Frozen) -> np.ndarray:
    out = np.full(X.shape[0], -7, dtype=np.int64)
    assign_chunk(
        np.ascontiguousarray(X),
        categories,
        frozen.const,
        frozen.means,
        frozen.factor,
        frozen.label_cost,
        frozen.alive,
        out,
        frozen.min_precision,
        frozen.max_precision,
    )
    return out


def _check_argmin(assign: np.ndarray, cost: np.ndarray) -> None:
    """assign is the row-wise argmin, on rows whose best two costs are clearly apart."""
    ordered = np.sort(cost, axis=1)
    clear = ordered[:, 1] - ordered[:, 0] > 1e-9
    assert clear.mean() > 0.9  # the oracle is meaningful on these inputs
    np.testing.assert_array_equal(assign[clear], cost.argmin(axis=1)[clear])
    rows = np.arange(cost.shape[0])
    np.testing.assert_allclose(cost[rows, assign], ordered[:, 0], rtol=1e-12, atol=1e-9)


def test_assign_chunk_full_matches_scipy_argmin() -> None:
    """Hand-built inputs (own Cholesky, own constant): the documented cost, labels included."""
    rng = np.random.default_rng(0)
    n, d, k, m = 80, 3, 4, 3
    means = rng.normal(scale=2.0, size=(k, d))
    covs = [_random_spd(rng, d) for _ in range(k)]
    weights = rng.dirichlet(np.ones(k))
    label_cost = rng.uniform(0.0, 3.0, size=(k, m))
    X = rng.normal(scale=3.0, size=(n, d))
    categories = np.where(rng.random(n) < 0.5, rng.integers(0, m, n), -1).astype(np.int64)

    const = np.array(
        [
            -math.log(w) + 0.5 * d * math.log(2 * math.pi) + 0.5 * np.linalg.slogdet(s)[1]
            for w, s in zip(weights, covs, strict=True)
        ]
    )
    factor = np.stack([np.linalg.inv(np.linalg.cholesky(s)) for s in covs])
    out = np.full(n, -7, dtype=np.int64)
    alive = np.ones(k, dtype=np.bool_)
    cost = _brute_cost(X, categories, weights, means, covs, label_cost)
    # The Euclidean bounds (1 / the largest and the smallest eigenvalue) decide most rows
    # without an exact cost and visit clusters nearest first; a zero lower bound and an
    # infinite upper one compute every exact cost: all find the exact argmin.
    tight = np.array([(1 - 1e-9) / np.linalg.eigvalsh(s)[-1] for s in covs])
    top = np.array([(1 + 1e-9) / np.linalg.eigvalsh(s)[0] for s in covs])
    for low, high in ((tight, top), (tight, np.full(k, np.inf)), (np.zeros(k), top)):
        out[:] = -7
        assign_chunk(X, categories, const, means, factor, label_cost, alive, out, low, high)
        _check_argmin(out, cost)
    # The label cost matters here: without it some labeled rows go elsewhere.
    plain = _brute_cost(X, categories, weights, means, covs, np.zeros_like(label_cost))
    assert np.any(plain.argmin(axis=1) != cost.argmin(axis=1))
    # Unlabeled rows ignore label_cost entirely.
    unlabeled = categories < 0
    np.testing.assert_array_equal(out[unlabeled], plain.argmin(axis=1)[unlabeled])


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_freeze_then_assign_matches_scipy_argmin(covariance: str) -> None:
    """``freeze`` (precision factor, constant) + ``assign_chunk`` = argmin of -ln p - logpdf
    under the family's covariance (diagonal: S's diagonal; spherical: tr S / d times I)."""
    rng = np.random.default_rng(1)
    n, d, k = 90, 3, 4
    family = FAMILIES[covariance]
    means = rng.normal(scale=2.0, size=(k, d))
    cov = np.stack([_random_spd(rng, d) for _ in range(k)])
    weights = rng.dirichlet(np.ones(k))
    X = rng.normal(scale=3.0, size=(n, d))
    categories = np.full(n, -1, dtype=np.int64)
    frozen = freeze(
        weights,
        means,
        cov,
        np.ones(k, dtype=np.bool_),
        np.zeros((k, 1)),
        weights * n,
        family,
        1.0,
    )
    assert frozen.alive.all()
    np.testing.assert_array_equal(frozen.label_cost, 0.0)  # no labels, no label cost
    out = _assign(X, categories, frozen)
    covs = [_family_cov(c, covariance) for c in cov]
    _check_argmin(out, _brute_cost(X, categories, weights, means, covs, np.zeros((k, 1))))


def test_assign_chunk_skips_dead_clusters_and_takes_first_on_ties() -> None:
    rng = np.random.default_rng(2)
    d = 2
    cov = _random_spd(rng, d)
    means = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    weights = np.array([0.3, 0.3, 0.4])
    covs = np.stack([cov, cov, cov])
    X = rng.normal(size=(30, d))
    X[:5] += 5.0
    categories = np.full(30, -1, dtype=np.int64)
    alive = np.ones(3, dtype=np.bool_)
    frozen = freeze(weights, means, covs, alive, np.zeros((3, 1)), weights * 30, FULL, 0.0)
    out = _assign(X, categories, frozen)
    assert not np.any(out == 1)  # cluster 1 is cluster 0's twin: ties go to the first
    assert set(out) == {0, 2}

    dead0 = freeze(
        weights, means, covs, np.array([False, True, True]), np.zeros((3, 1)), weights, FULL, 0.0
    )
    moved = _assign(X, categories, dead0)
    np.testing.assert_array_equal(moved, np.where(out == 0, 1, out))


def test_freeze_drops_singular_and_empty_clusters() -> None:
    d = 2
    cov = np.stack([np.eye(d), np.array([[1.0, 1.0], [1.0, 1.0]]), np.eye(d)])
    means = np.zeros((3, d))
    for covariance in COVARIANCES:
        family = FAMILIES[covariance]
        frozen = freeze(
            np.array([0.5, 0.5, 0.0]),
            means,
            cov,
            np.ones(3, dtype=np.bool_),
            np.zeros((3, 1)),
            np.array([5.0, 5.0, 0.0]),
            family,
            0.0,
        )
        # full: the rank-1 covariance is singular; the diagonal/spherical ones are not.
        expected = [True, covariance != "full", False]
        assert frozen.alive.tolist() == expected, covariance
        assert np.isinf(frozen.const[~frozen.alive]).all()
    assert precision(FULL, np.zeros((d, d))) is None
    assert precision(DIAGONAL, np.diag([1.0, 0.0])) is None


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_precision_bounds_hold_the_exact_mahalanobis_term(covariance: str) -> None:
    """min_precision |u|^2 <= |P u|^2 <= max_precision |u|^2 with P as computed, for random
    ill-conditioned covariances and directions (the extreme eigenvectors among them)."""
    rng = np.random.default_rng(21)
    family = FAMILIES[covariance]
    for _ in range(20):
        d = int(rng.integers(1, 7))
        scales = 10.0 ** rng.uniform(-4, 4, size=d)
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        cov = _family_cov((q * scales) @ q.T, covariance)
        found = precision(family, cov)
        assert found is not None
        factor, _, low, high = found
        eigenvectors = np.linalg.eigh(cov)[1].T
        for u in [*rng.normal(size=(50, d)) * 10.0 ** rng.uniform(-3, 3), *eigenvectors]:
            term = float(np.sum((factor @ u) ** 2))
            norm = float(u @ u)
            assert low * norm <= term <= high * norm


def test_freeze_label_cost() -> None:
    """beta (s_c / L_c) (-ln q_c(z)): zero without beta or without labels in the cluster; the
    cluster's majority category is its cheapest; scaled by beta."""
    counts = np.array([[6.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 8.0]])
    sizes = np.array([20.0, 15.0, 30.0])
    weights = sizes / sizes.sum()
    means = np.zeros((3, 2))
    cov = np.stack([np.eye(2)] * 3)
    alive = np.ones(3, dtype=np.bool_)

    def cost(beta: float) -> np.ndarray:
        return freeze(weights, means, cov, alive, counts, sizes, FULL, beta).label_cost

    np.testing.assert_array_equal(cost(0.0), 0.0)
    one = cost(1.0)
    np.testing.assert_array_equal(one[1], 0.0)  # no labeled member: no charge
    assert np.all(np.isfinite(one)) and np.all(one >= 0)
    assert one[0].argmin() == 0 and one[2].argmin() == 2
    assert one[0, 2] > one[0, 1] > one[0, 0]
    np.testing.assert_allclose(cost(0.5), 0.5 * one, rtol=1e-14)


def _totals(
    X: np.ndarray,
    categories: np.ndarray,
    assign: np.ndarray,
    shift: np.ndarray,
    n_categories: int,
    labeled_weight: float = 1.0,
) -> Totals:
    totals = Totals.zeros(shift, n_categories)
    accumulate_chunk(
        np.ascontiguousarray(X),
        categories,
        labeled_weight,
        assign,
        totals.shift,
        totals.count,
        totals.s1,
        totals.s2,
        totals.label_counts,
    )
    return totals


@pytest.mark.parametrize("labeled_weight", [1.0, 3.0])
def test_accumulate_moments_match_numpy_weighted(labeled_weight: float) -> None:
    X, truth = _blobs([25, 30, 20], d=3, seed=3)
    categories = _categories(truth, seed=4)
    rng = np.random.default_rng(5)
    assign = np.where(rng.random(X.shape[0]) < 0.1, (truth + 1) % 3, truth).astype(np.int64)
    shift = rng.normal(size=(4, 3))  # a 4th slot stays empty
    totals = _totals(X, categories, assign, shift, 3, labeled_weight)
    means, cov = totals.moments()

    w = np.where(categories >= 0, labeled_weight, 1.0)
    for c in range(3):
        rows = assign == c
        assert totals.count[c] == pytest.approx(w[rows].sum(), rel=1e-14)
        np.testing.assert_allclose(means[c], np.average(X[rows], axis=0, weights=w[rows]))
        expected = np.cov(X[rows].T, bias=True, aweights=w[rows])
        np.testing.assert_allclose(cov[c], expected, rtol=1e-10, atol=1e-12)
        for z in range(3):
            assert totals.label_counts[c, z] == labeled_weight * np.sum(rows & (categories == z))
    assert totals.count[3] == 0
    np.testing.assert_array_equal(means[3], shift[3])
    np.testing.assert_array_equal(cov[3], 0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("labeled_weight", [1.0, 2.5])
def test_pass_rows_is_assign_then_accumulate(dtype: type, labeled_weight: float) -> None:
    """The fused sweep places and sums exactly as the two kernels one after the other on the
    same values (float32 rows read as they are: the same doubles as a float64 copy), with
    labels and a dead cluster."""
    X, truth = _blobs([30, 25, 35], d=3, seed=11)
    X = np.ascontiguousarray(X.astype(dtype))
    wide = X.astype(np.float64)
    categories = _categories(truth, seed=12)
    rng = np.random.default_rng(13)
    k = 4
    means = np.vstack([wide[truth == c].mean(axis=0) for c in range(3)] + [wide.mean(axis=0)])
    covs = np.stack([_random_spd(rng, 3) for _ in range(k)])
    counts = rng.integers(0, 5, size=(k, 3)).astype(np.float64)
    alive = np.array([True, True, False, True])
    weights = np.full(k, 0.25)
    frozen = freeze(weights, means, covs, alive, counts, weights * 90, FULL, 1.0)

    expected_assign = _assign(wide, categories, frozen)
    expected = _totals(wide, categories, expected_assign, frozen.means, 3, labeled_weight)
    got = Totals.zeros(frozen.means, 3)
    assign = np.full(X.shape[0], -7, dtype=np.int64)
    pass_rows(
        X, categories, frozen.const, frozen.means, frozen.factor, frozen.label_cost,
        frozen.alive, frozen.min_precision, frozen.max_precision, labeled_weight, assign,
        got.count, got.s1, got.s2, got.label_counts,
    )  # fmt: skip
    np.testing.assert_array_equal(assign, expected_assign)
    assert not np.any(assign == 2)
    for name in ("count", "s1", "s2", "label_counts"):
        np.testing.assert_allclose(getattr(got, name), getattr(expected, name), rtol=1e-13)


def test_totals_add_over_chunks_equals_one_chunk_and_shift_keeps_digits() -> None:
    X, truth = _blobs([40, 35], d=2, seed=6)
    X = X + 1e8  # far from the origin: uncentred sums would lose the covariance's digits
    categories = _categories(truth, seed=7)
    shift = np.stack([X[truth == c].mean(axis=0) + 0.3 for c in range(2)])
    whole = _totals(X, categories, truth, shift, 3)
    parts = Totals.zeros(shift, 3)
    for rows in np.array_split(np.arange(X.shape[0]), 4):
        parts.add(_totals(X[rows], categories[rows], truth[rows], shift, 3))
    np.testing.assert_allclose(parts.count, whole.count)
    np.testing.assert_allclose(parts.label_counts, whole.label_counts)
    np.testing.assert_allclose(parts.moments()[0], whole.moments()[0], rtol=1e-15)
    np.testing.assert_allclose(parts.moments()[1], whole.moments()[1], rtol=1e-9)
    for c in range(2):
        expected = np.cov(X[truth == c].T, bias=True)
        np.testing.assert_allclose(whole.moments()[1][c], expected, rtol=1e-6)


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_energy_equals_from_scratch_cost(covariance: str, beta: float) -> None:
    X, truth = _blobs([30, 25, 35], d=2, seed=8)
    y = _categories(truth, seed=9)
    rng = np.random.default_rng(10)
    partition = np.where(rng.random(X.shape[0]) < 0.2, rng.integers(0, 3, X.shape[0]), truth)
    totals = _totals(X, y, partition.astype(np.int64), rng.normal(size=(3, 2)), 3)
    alive = np.ones(3, dtype=np.bool_)
    got = energy(totals, alive, FAMILIES[covariance], beta, float(X.shape[0]))
    labels = y if beta else None
    expected = cec_ib_energy(X, partition, labels, beta, covariance)
    assert got == pytest.approx(expected, rel=1e-10)
    if beta:  # the labels' term is really in there
        assert got > cec_ib_energy(X, partition, None, 0.0, covariance) + 1e-3


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_energy_with_labeled_weight_equals_repeated_rows(covariance: str) -> None:
    """labeled_weight w: as if every labeled row were there w times."""
    X, truth = _blobs([30, 25, 35], d=2, seed=11)
    y = _categories(truth, seed=12)
    rng = np.random.default_rng(13)
    partition = np.where(rng.random(X.shape[0]) < 0.2, rng.integers(0, 3, X.shape[0]), truth)
    w = 3
    totals = _totals(X, y, partition.astype(np.int64), np.zeros((3, 2)), 3, float(w))
    labeled = np.flatnonzero(y >= 0)
    rows = np.concatenate([np.arange(X.shape[0]), np.repeat(labeled, w - 1)])
    n_total = X.shape[0] + (w - 1) * labeled.shape[0]
    got = energy(totals, np.ones(3, dtype=np.bool_), FAMILIES[covariance], 1.0, float(n_total))
    expected = cec_ib_energy(X[rows], partition[rows], y[rows], 1.0, covariance)
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_polish_chunk_on_whole_data_lowers_energy_and_tracks_it(
    covariance: str, beta: float
) -> None:
    """One chunk holding every row: Hartigan moves against the global statistics lower the
    from-scratch energy, and the state's per-cluster energies follow the moves exactly."""
    X, truth = _blobs([30, 25, 35], d=2, seed=14)
    y = _categories(truth, seed=15)
    rng = np.random.default_rng(16)
    assign = np.where(rng.random(X.shape[0]) < 0.15, (truth + 1) % 3, truth).astype(np.int64)
    family = FAMILIES[covariance]
    n_total = float(X.shape[0])
    alive = np.ones(3, dtype=np.bool_)
    totals = _totals(X, y, assign, np.zeros((3, 2)), 3)
    state = polish_state(totals, alive, family, beta, n_total)
    labels = y if beta else None
    before = cec_ib_energy(X, assign, labels, beta, covariance)
    assert state.energy.sum() == pytest.approx(before, rel=1e-10)
    assert energy(totals, alive, family, beta, n_total) == pytest.approx(before, rel=1e-10)

    start = assign.copy()
    movable = np.ones(X.shape[0], dtype=np.bool_)
    moves = polish_chunk(X, y, movable, assign, state, family, n_total, beta, 3.0, 1e-12)
    assert moves == np.count_nonzero(assign != start) > 0
    after = cec_ib_energy(X, assign, labels, beta, covariance)
    assert after < before
    assert state.energy.sum() == pytest.approx(after, rel=1e-9)
    np.testing.assert_array_equal(state.size, np.bincount(assign, minlength=3))


def test_polish_chunk_respects_movable_and_min_size() -> None:
    X, truth = _blobs([30, 25, 35], d=2, seed=17)
    y = np.full(X.shape[0], -1, dtype=np.int64)
    rng = np.random.default_rng(18)
    assign = np.where(rng.random(X.shape[0]) < 0.15, (truth + 1) % 3, truth).astype(np.int64)
    totals = _totals(X, y, assign, np.zeros((3, 2)), 1)
    alive = np.ones(3, dtype=np.bool_)
    n = float(X.shape[0])

    def polish(movable: np.ndarray, min_size: float) -> tuple[int, np.ndarray]:
        state = polish_state(totals, alive, FULL, 0.0, n)
        out = assign.copy()
        return polish_chunk(X, y, movable, out, state, FULL, n, 0.0, min_size, 1e-12), out

    moves, out = polish(np.zeros(X.shape[0], dtype=np.bool_), 3.0)
    assert moves == 0 and np.array_equal(out, assign)
    moves, out = polish(np.ones(X.shape[0], dtype=np.bool_), n)  # no cluster may shrink
    assert moves == 0 and np.array_equal(out, assign)
    half = np.arange(X.shape[0]) % 2 == 0
    moves, out = polish(half, 3.0)
    assert moves > 0
    np.testing.assert_array_equal(out[~half], assign[~half])
