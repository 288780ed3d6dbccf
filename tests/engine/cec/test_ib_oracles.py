"""Oracles of specs/cec-ib.md Sec. 2.5 and Sec. 4 on the from-scratch cost ``cec_ib_energy``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from app.engine import BETA0, cec_ib_energy, critical_beta
from app.engine.core.cost import cluster_energies, gaussian_cost, label_entropy

WORKED_X = np.array([0.0, 1.0, 2.0, 10.0, 11.0, 13.0])[:, None]
WORKED_Y = np.array([0, -1, 0, 1, -1, 0])  # A - A B - A
SPLIT = np.array([0, 0, 0, 1, 1, 1])
WHOLE = np.zeros(6, dtype=int)


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def _blobs(sizes: list[int], d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(s, d)) @ rng.normal(size=(d, d)) + 4 * i for i, s in enumerate(sizes)]
    return np.vstack(parts), np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize(
    ("beta", "split", "whole"),
    [
        (0.0, 2.1211776248, 3.0815564536),
        (0.5, 2.2944644199, 3.3627240259),
        (1.0, 2.4677512151, 3.6438915983),
    ],
)
def test_worked_example(beta: float, split: float, whole: float) -> None:
    assert cec_ib_energy(WORKED_X, SPLIT, WORKED_Y, beta) == pytest.approx(split, abs=1e-9)
    assert cec_ib_energy(WORKED_X, WHOLE, WORKED_Y, beta) == pytest.approx(whole, abs=1e-9)


def test_worked_example_parts() -> None:
    assert gaussian_cost(WORKED_X[:3]) == pytest.approx(1.2162059792, abs=1e-9)
    assert gaussian_cost(WORKED_X[3:]) == pytest.approx(1.6398549093, abs=1e-9)
    assert label_entropy(WORKED_Y[3:]) == pytest.approx(math.log(2), abs=1e-12)
    assert label_entropy(WORKED_Y) == pytest.approx(0.5623351446, abs=1e-9)
    assert label_entropy(WORKED_Y[[1, 4]]) == 0.0  # no labeled point: h = 0 (decision 7.6)


def test_t1_cost_is_sum_of_cluster_energies() -> None:
    X, _ = _blobs([10, 12, 9])
    partition = np.random.default_rng(1).permutation(np.repeat([0, 1, 2], [10, 12, 9]))
    y = np.where(np.arange(31) % 3 == 0, partition % 2, -1)
    parts = cluster_energies(X, partition, y, 0.7)
    assert sum(parts.values()) == pytest.approx(cec_ib_energy(X, partition, y, 0.7), rel=1e-14)
    assert len(parts) == 3


def test_t2_t3_beta_zero_and_no_labels_give_cec() -> None:
    X, truth = _blobs([10, 12, 9])
    partition = np.arange(31) % 3
    cec = cec_ib_energy(X, partition)
    assert cec_ib_energy(X, partition, truth, 0.0) == pytest.approx(cec, rel=1e-14)
    unlabeled = np.full(31, -1)
    for beta in (0.3, 1.0, 5.0):
        assert cec_ib_energy(X, partition, unlabeled, beta) == pytest.approx(cec, rel=1e-14)


def test_t4_cross_entropy_identity() -> None:
    """-(1/|Y|) sum ln N(x; m_Y, S_Y) = (d/2) ln(2 pi e) + (1/2) ln det S_Y, and eq. (2)."""
    X, _ = _blobs([15, 20])
    partition = np.repeat([0, 1], [15, 20])
    total = 0.0
    for c in (0, 1):
        Y = X[partition == c]
        cov = np.cov(Y.T, bias=True)
        logpdf = multivariate_normal(Y.mean(axis=0), cov).logpdf(Y)
        assert -logpdf.mean() == pytest.approx(gaussian_cost(Y), rel=1e-12)
        p = Y.shape[0] / X.shape[0]
        total -= (np.log(p) + logpdf).sum()
    assert total / X.shape[0] == pytest.approx(cec_ib_energy(X, partition), rel=1e-12)


def test_t5_consistent_partitions_do_not_depend_on_beta() -> None:
    X, truth = _blobs([10, 10, 10])
    refinement = truth * 2 + (np.arange(30) % 2)  # splits each category: still consistent
    for partition in (truth, refinement):
        costs = [cec_ib_energy(X, partition, truth, b) for b in (0.0, 0.5, 2.0)]
        np.testing.assert_allclose(costs, costs[0], rtol=1e-14)
    mixed = np.arange(30) % 3
    costs = [cec_ib_energy(X, mixed, truth, b) for b in (0.0, 0.5, 2.0)]
    assert costs[0] < costs[1] < costs[2]
    # dE/dbeta = H(Z|Y)
    slope = (costs[2] - costs[1]) / 1.5
    h_zy = sum(_entropy(np.bincount(truth[mixed == c])) * (mixed == c).mean() for c in range(3))
    assert slope == pytest.approx(h_zy, rel=1e-10)


def test_t6_theorem_3_1_identity() -> None:
    """E_1 = H^x((X||f)|Z) + H(Z) for complete labels and every partition."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    z = rng.integers(0, 3, size=60)
    partition = rng.integers(0, 3, size=60)
    n = X.shape[0]
    conditional = 0.0
    for c in range(3):
        Y = X[partition == c]
        logpdf = multivariate_normal(Y.mean(axis=0), np.cov(Y.T, bias=True)).logpdf(X)
        for j in range(3):
            members = (partition == c) & (z == j)
            if members.any():
                p_ij = members.sum() / (z == j).sum()
                conditional -= (math.log(p_ij) + logpdf[members]).sum()
    h_z = _entropy(np.bincount(z))
    expected = conditional / n + h_z
    assert cec_ib_energy(X, partition, z, 1.0) == pytest.approx(expected, rel=1e-12)


def test_t7_chain_rule_for_proportional_partitions() -> None:
    """Every cluster has half of its points labeled: H(Y) + H(Z|Y) = H(Z, Y) on X_l."""
    X, _ = _blobs([8, 6, 10], seed=2)
    partition = np.repeat([0, 1, 2], [8, 6, 10])
    rng = np.random.default_rng(5)
    z = rng.integers(0, 3, size=24)
    y = np.where(np.arange(24) % 2 == 0, z, -1)  # each cluster (even sizes) half labeled
    h_y = _entropy(np.bincount(partition))
    h_z_given_y = cec_ib_energy(X, partition, y, 1.0) - cec_ib_energy(X, partition, y, 0.0)
    labeled = y >= 0
    joint = np.zeros((3, 3))
    np.add.at(joint, (partition[labeled], y[labeled]), 1)
    assert h_y + h_z_given_y == pytest.approx(_entropy(joint.ravel()), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n1=st.integers(4, 15), n2=st.integers(4, 15))
def test_t8_gaussian_term_never_increases_under_refinement(seed: int, n1: int, n2: int) -> None:
    """Lemma E.1: H(N(X)) >= p H(N(Y1)) + (1-p) H(N(Y2))."""
    rng = np.random.default_rng(seed)
    Y1 = rng.normal(size=(n1, 2)) @ rng.normal(size=(2, 2)) + rng.normal(size=2)
    Y2 = rng.normal(size=(n2, 2)) @ rng.normal(size=(2, 2)) + rng.normal(size=2)
    p = n1 / (n1 + n2)
    whole = gaussian_cost(np.vstack([Y1, Y2]))
    assert whole >= p * gaussian_cost(Y1) + (1 - p) * gaussian_cost(Y2) - 1e-12


def test_t9_theorem_4_1_merging_categories_never_helps_at_beta_one() -> None:
    X, z = _blobs([12, 15, 10, 9], seed=4)
    base = cec_ib_energy(X, z, z, 1.0)
    for a, b in itertools.combinations(range(4), 2):
        merged = np.where(z == b, a, z)
        gauss_increase = sum(
            (merged == c).mean() * gaussian_cost(X[merged == c]) for c in np.unique(merged)
        ) - sum((z == c).mean() * gaussian_cost(X[z == c]) for c in range(4))
        diff = cec_ib_energy(X, merged, z, 1.0) - base
        assert diff >= 0.0
        assert diff == pytest.approx(gauss_increase, rel=1e-10)
    everything = np.zeros_like(z)
    assert cec_ib_energy(X, everything, z, 1.0) >= base


def test_t10_theorem_4_2_critical_beta() -> None:
    """3 categories (40/60/50 points), merge the first two: the cost difference vanishes at
    beta_0, changes sign around it, and equals the closed form of the spec."""
    rng = np.random.default_rng(6)
    centers = np.array([[0.0, 0.0], [1.5, 0.5], [6.0, 0.0]])
    z = np.repeat([0, 1, 2], [40, 60, 50])
    X = centers[z] + rng.normal(size=(150, 2))
    merged = np.where(z == 1, 0, z)
    beta0 = critical_beta(X, z, [0, 1])
    assert 0.0 < beta0 < 1.0  # <= 1 always, by Lemma E.1; > 0 as the blobs overlap

    def diff(beta: float) -> float:
        return cec_ib_energy(X, merged, z, beta) - cec_ib_energy(X, z, z, beta)

    assert abs(diff(beta0)) < 1e-10
    assert diff(beta0 - 0.1) < 0 < diff(beta0 + 0.1)
    n = X.shape[0]
    p = np.array([40, 60]) / n
    q = p.sum()
    union = X[z <= 1]
    logdet_union = np.linalg.slogdet(np.cov(union.T, bias=True))[1]
    logdets = [np.linalg.slogdet(np.cov(X[z == c].T, bias=True))[1] for c in (0, 1)]
    for beta in (beta0 - 0.1, 0.5, beta0 + 0.1):
        closed = q * (
            (beta - 1) * _entropy(p / q)
            + sum(p[i] / (2 * q) * (logdet_union - logdets[i]) for i in range(2))
        )
        assert diff(beta) == pytest.approx(closed, abs=1e-13)


def test_t11_example_4_1_beta0_of_a_split_gaussian() -> None:
    assert pytest.approx(0.2697759132, abs=1e-10) == BETA0
    assert 1 + math.log(math.sqrt(1 - 2 / math.pi)) / _entropy(np.array([1, 1])) == BETA0
    x = np.random.default_rng(0).normal(size=100_000)
    split = (x >= x.mean()).astype(int)
    beta0 = critical_beta(x[:, None], split, [0, 1])
    assert beta0 == pytest.approx(BETA0, abs=0.01)
    # above beta_0 the consistent split is cheaper than one cluster, below it is dearer
    whole = np.zeros_like(split)
    for beta, split_wins in ((beta0 + 0.05, True), (beta0 - 0.05, False)):
        cheaper = cec_ib_energy(x[:, None], split, split, beta) < cec_ib_energy(
            x[:, None], whole, split, beta
        )
        assert cheaper == split_wins


def test_t14_affine_invariance() -> None:
    X, z = _blobs([10, 12, 11], d=3, seed=8)
    partition = np.arange(33) % 3
    y = np.where(np.arange(33) % 2 == 0, z, -1)
    rng = np.random.default_rng(9)
    A = rng.normal(size=(3, 3))
    b = rng.normal(size=3)
    base = cec_ib_energy(X, partition, y, 0.6)
    moved = cec_ib_energy(X @ A.T + b, partition, y, 0.6)
    assert moved == pytest.approx(base + math.log(abs(np.linalg.det(A))), rel=1e-12)
    D = np.diag([2.0, 0.5, 3.0])
    for covariance in ("diagonal", "spherical"):
        scale = D if covariance == "diagonal" else 2.0 * np.linalg.qr(A)[0]
        e0 = cec_ib_energy(X, partition, y, 0.6, covariance)
        e1 = cec_ib_energy(X @ scale.T + b, partition, y, 0.6, covariance)
        assert e1 == pytest.approx(e0 + math.log(abs(np.linalg.det(scale))), rel=1e-12)


def test_t14_relabelling_invariance() -> None:
    X, z = _blobs([10, 12, 11], seed=10)
    partition = np.arange(33) % 3
    y = np.where(np.arange(33) % 2 == 0, z, -1)
    base = cec_ib_energy(X, partition, y, 1.0)
    assert cec_ib_energy(X, (partition + 1) % 3 + 7, y, 1.0) == pytest.approx(base, rel=1e-14)
    renamed = np.where(y >= 0, 10 + 2 * y, -1)
    assert cec_ib_energy(X, partition, renamed, 1.0) == pytest.approx(base, rel=1e-14)
    perm = np.random.default_rng(1).permutation(33)
    assert cec_ib_energy(X[perm], partition[perm], y[perm], 1.0) == pytest.approx(base, rel=1e-12)


def test_t15_single_cluster() -> None:
    X, z = _blobs([10, 12], seed=11)
    y = np.where(np.arange(22) % 3 == 0, z, -1)
    whole = np.zeros(22, dtype=int)
    expected = gaussian_cost(X) + 0.8 * _entropy(np.bincount(y[y >= 0]))
    assert cec_ib_energy(X, whole, y, 0.8) == pytest.approx(expected, rel=1e-13)


def test_t17_entropy_bounds() -> None:
    _, z = _blobs([10, 12, 11, 9], seed=12)
    partition = np.random.default_rng(2).integers(0, 4, size=42)
    y = np.where(np.arange(42) % 2 == 0, z, -1)
    h_y = _entropy(np.bincount(partition))
    assert h_y <= math.log(4) + 1e-15
    for c in range(4):
        h = label_entropy(y[partition == c])
        assert 0.0 <= h <= math.log(4) + 1e-15
