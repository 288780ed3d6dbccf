"""The pruned mixture E-step kernel (app/engine/ppc/chunked/mixture_kernels.py) against the dense
E-step in NumPy: scores by ``ppc.mstep.log_gaussian``, posteriors by softmax, statistics by
brute force. On separated clusters (most components pruned), on overlapping ones (none
pruned), for every family, with labeled rows and EM-lambda weights. Passes with
NUMBA_DISABLE_JIT=1 too (the kernel runs as Python)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from app.engine.core.families import DIAGONAL, FULL, SPHERICAL
from app.engine.ppc.chunked.mixture_kernels import CUT, SKIP
from app.engine.ppc.chunked.mixture_stats import MixtureStats
from app.engine.ppc.chunked.ppc_tasks import MixtureRule
from app.engine.ppc.mstep import log_gaussian, precision_cholesky

FAMILIES = {"full": FULL, "diagonal": DIAGONAL, "spherical": SPHERICAL}


def _mixture(family: int, spread: float, rng: np.random.Generator, m: int = 6, d: int = 4):
    means = rng.uniform(-spread, spread, size=(m, d))
    if family == FULL:
        root = rng.normal(size=(m, d, d)) * 0.4 + np.eye(d)
        cov = root @ np.transpose(root, (0, 2, 1))
    elif family == DIAGONAL:
        cov = rng.uniform(0.3, 2.0, size=(m, d))
    else:
        cov = rng.uniform(0.3, 2.0, size=m)
    weights = rng.dirichlet(np.ones(m))
    return weights, means, cov


def _dense(X, labels, rule: MixtureRule, shift, unlabeled_weight):
    """The E-step as the in-memory fit computes it, and the statistics by brute force."""
    a = log_gaussian(X, rule.means, rule.prec_chol, rule.family) + np.log(rule.weights)
    plain = a.argmax(axis=1)
    labeled = labels >= 0
    a[labeled] = -np.inf
    a[labeled, labels[labeled]] = (
        log_gaussian(X[labeled], rule.means, rule.prec_chol, rule.family) + np.log(rule.weights)
    )[np.arange(labeled.sum()), labels[labeled]]
    log_z = logsumexp(a, axis=1)
    resp = np.exp(a - log_z[:, np.newaxis])
    weighted = resp * np.where(labeled, 1.0, unlabeled_weight)[:, np.newaxis]
    count = weighted.sum(axis=0)
    s1 = weighted.T @ X
    m, d = rule.means.shape
    s2 = np.zeros((m, d, d))
    for k in range(m):
        c = X - shift[k]
        s2[k] = (weighted[:, k, np.newaxis] * c).T @ c
    agree = int(np.sum(labeled & (plain == labels)))
    return resp.argmax(axis=1), float(log_z.sum()), agree, count, s1, s2


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("spread", [1.5, 40.0], ids=["overlapping", "separated"])
@pytest.mark.parametrize("unlabeled_weight", [1.0, 0.3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_is_the_dense_e_step(
    name: str, spread: float, unlabeled_weight: float, dtype: type
) -> None:
    """Float32 rows (a chunk of the array store, read as they are) give the dense E-step of
    the same values as doubles."""
    rng = np.random.default_rng(3)
    family = FAMILIES[name]
    weights, means, cov = _mixture(family, spread, rng)
    m, d = means.shape
    truth = rng.integers(0, m, size=400)
    stored = (means[truth] + rng.normal(size=(400, d))).astype(dtype)
    labels = np.where(rng.random(400) < 0.15, rng.integers(0, m, size=400), -1)
    rule = MixtureRule(weights, means, precision_cholesky(cov, family), family, unlabeled_weight)
    shift = means + 0.5
    stats = MixtureStats.zeros(shift, family)
    mode, log_z, agree = rule.kernel_pass(stored, labels, stats)
    dense_mode, dense_log_z, dense_agree, count, s1, s2 = _dense(
        stored.astype(np.float64), labels, rule, shift, unlabeled_weight
    )
    np.testing.assert_array_equal(mode, dense_mode)
    assert log_z == pytest.approx(dense_log_z, rel=1e-12)
    assert stats.log_z == log_z
    assert agree == dense_agree
    np.testing.assert_allclose(stats.count, count, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats.s1, s1, rtol=1e-12, atol=1e-9)
    expected = s2 if family == FULL else np.diagonal(s2, axis1=1, axis2=2)
    np.testing.assert_allclose(stats.s2, expected, rtol=1e-11, atol=1e-9)


def test_the_cut_is_below_float64_rounding() -> None:
    """What a left-out component could weigh, for 7,600 of them, is under one ulp of 1."""
    assert 7_600 * np.exp(-CUT) < np.finfo(np.float64).eps


def test_the_bound_never_exceeds_the_exact_score() -> None:
    """lam_k |x - m_k|^2 <= |P_k^T (x - m_k)|^2 <= lam_max_k |x - m_k|^2 for random full
    precisions and points."""
    rng = np.random.default_rng(5)
    weights, means, cov = _mixture(FULL, 5.0, rng, m=8, d=6)
    rule = MixtureRule(weights, means, precision_cholesky(cov, FULL), FULL, 1.0)
    X = rng.normal(scale=10.0, size=(2_000, 6))
    exact = -2.0 * (log_gaussian(X, means, rule.prec_chol, FULL) + np.log(weights) - rule.const)
    dist = ((X[:, np.newaxis, :] - means[np.newaxis]) ** 2).sum(axis=2)
    assert np.all(rule.lam * dist <= exact * (1.0 + 1e-12))
    # and the largest eigenvalue bounds it from above (the rows decided without an exact score)
    assert np.all(exact <= rule.lam_max * dist * (1.0 + 1e-12))
    tightest = [np.linalg.eigvalsh(p @ p.T).max() for p in rule.prec_chol]
    np.testing.assert_allclose(rule.lam_max, tightest, rtol=1e-8)  # a bound, not a blanket


def test_rows_labeled_skip_add_nothing() -> None:
    """A related row (label SKIP) is left out as if the chunk did not hold it: the same
    statistics, log partition and agreement as the kernel on the other rows alone."""
    rng = np.random.default_rng(8)
    weights, means, cov = _mixture(FULL, 3.0, rng)
    m, d = means.shape
    X = means[rng.integers(0, m, size=300)] + rng.normal(size=(300, d))
    labels = np.where(rng.random(300) < 0.2, rng.integers(0, m, size=300), -1)
    skipped = rng.random(300) < 0.3
    rule = MixtureRule(weights, means, precision_cholesky(cov, FULL), FULL, 0.5)
    marked = np.where(skipped, SKIP, labels)
    with_skip = MixtureStats.zeros(means, FULL)
    mode, log_z, agree = rule.kernel_pass(X, marked, with_skip)
    alone = MixtureStats.zeros(means, FULL)
    mode_alone, log_z_alone, agree_alone = rule.kernel_pass(
        np.ascontiguousarray(X[~skipped]), labels[~skipped], alone
    )
    np.testing.assert_array_equal(mode[skipped], -1)
    np.testing.assert_array_equal(mode[~skipped], mode_alone)
    assert (log_z, agree) == (log_z_alone, agree_alone)
    for name in ("count", "s1", "s2"):
        np.testing.assert_array_equal(getattr(with_skip, name), getattr(alone, name))
