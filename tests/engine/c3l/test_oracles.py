"""C3L spec oracles (specs/c3l.md Sec. 2.7, 4.1-4.2): Theorem 1's closed-form table, brute-force
constrained minimisation, KKT, monotonicity in eps, and the fixed-partition cost tables."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from app.engine.c3l.cost import constrained_fit, leakage_of, leakage_quantile, side_cost
from app.engine.core.families import HALF_LOG_2PIE

# m_Y, sigma_Y, eps, m_eps, sigma_eps, C_eps (spec Sec. 4.2)
TABLE = [
    (1, 1, 0.5, 1, 1, 1.4189385332),
    (1, 1, 0.2, 1, 1, 1.4189385332),
    (1, 1, 0.1, 1.1685608318, 0.9118328620, 1.4450933580),
    (1, 1, 0.05, 1.3381534398, 0.8135395259, 1.5544252707),
    (1, 1, 0.01, 1.5538578499, 0.6679387323, 1.9798888507),
    (1, 1, 0.001, 1.6980583815, 0.5494921460, 2.7830470661),
    (-1, 1, 0.05, -1.3381534398, 0.8135395259, 1.5544252707),
    (0, 1, 0.05, 1.6448536270, 1, 2.7717102603),
    (2, 0.5, 0.05, 2, 0.5, 0.7257913526),
    (0.5, 2, 0.01, 3.6301066560, 1.5604315659, 4.1971391253),
    (3, 1, 0.01, 3, 1, 1.4189385332),
    (3, 1, 0.001, 3.0158530006, 0.9759308368, 1.4196738094),
]


@pytest.mark.parametrize(("m", "s", "eps", "m_eps", "s_eps", "cost"), TABLE)
def test_closed_form_table(m: float, s: float, eps: float, m_eps: float, s_eps: float,
                           cost: float) -> None:  # fmt: skip
    q = leakage_quantile(eps)
    mu, sigma = constrained_fit(m, s * s, q)
    assert mu == pytest.approx(m_eps, abs=1e-9)
    assert sigma == pytest.approx(s_eps, abs=1e-9)
    assert side_cost(m, s * s, q) == pytest.approx(cost, abs=1e-9)
    assert leakage_of(m, s * s, q) <= eps + 1e-12


def test_quantiles() -> None:
    for eps, q in ((0.4, 0.2533471031), (0.3, 0.5244005127), (0.25, 0.6744897502),
                   (1e-6, 4.7534243088), (0.5, 0.0), (0.7, 0.0)):  # fmt: skip
        assert leakage_quantile(eps) == pytest.approx(q, abs=1e-9)


def _cross_entropy(m_y: float, s_y: float, mu: float, sigma: float) -> float:
    """Eq. (14): H(Y || N(mu, sigma^2))."""
    return (
        0.5 * math.log(2 * math.pi) + math.log(sigma) + ((m_y - mu) ** 2 + s_y**2) / (2 * sigma**2)
    )


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force_constrained_minimisation(seed: int) -> None:
    """min over (mu, sigma) with |mu| >= q sigma: for each sigma the best mu is the feasible
    point closest to m_Y, so a 1-D search over sigma suffices."""
    rng = np.random.default_rng(seed)
    m_y, s_y = rng.normal(scale=2.0), rng.uniform(0.2, 3.0)
    eps = float(rng.choice([0.3, 0.1, 0.05, 0.01, 0.001]))
    q = leakage_quantile(eps)

    def best_for(sigma: float) -> float:
        lo = q * sigma
        mu = m_y if abs(m_y) >= lo else math.copysign(lo, m_y if m_y != 0 else 1.0)
        return _cross_entropy(m_y, s_y, mu, sigma)

    brute = minimize_scalar(best_for, bounds=(1e-3, 20.0), method="bounded",
                            options={"xatol": 1e-12}).fun  # fmt: skip
    assert side_cost(m_y, s_y**2, q) == pytest.approx(brute, abs=1e-7)
    mu, sigma = constrained_fit(m_y, s_y**2, q)
    assert _cross_entropy(m_y, s_y, mu, sigma) == pytest.approx(
        side_cost(m_y, s_y**2, q), abs=1e-12
    )
    assert norm.cdf(-abs(mu) / sigma) <= eps + 1e-12


def test_kkt_multipliers() -> None:
    """lambda* = (|m_eps| - |m_Y|) / sigma_eps^2 and d_sigma f + lambda* q = 0."""
    for (m_y, s_y, eps), lam in (((1, 1, 0.05), 0.5109242235), ((0.5, 2, 0.01), 1.2854928989)):
        q = leakage_quantile(eps)
        mu, sigma = constrained_fit(m_y, s_y**2, q)
        multiplier = (abs(mu) - abs(m_y)) / sigma**2
        assert multiplier == pytest.approx(lam, abs=1e-9)
        d_sigma = 1 / sigma - ((m_y - mu) ** 2 + s_y**2) / sigma**3
        assert d_sigma + multiplier * q == pytest.approx(0.0, abs=1e-12)


def test_monotone_in_eps_and_continuous_at_the_switch() -> None:
    m_y, s_y = 1.5, 2.0
    grid = [1e-12, 1e-6, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]
    fits = [constrained_fit(m_y, s_y**2, leakage_quantile(e)) for e in grid]
    costs = [side_cost(m_y, s_y**2, leakage_quantile(e)) for e in grid]
    assert all(a >= b for a, b in itertools.pairwise(costs))  # non-increasing in eps
    assert all(abs(a[0]) >= abs(b[0]) for a, b in itertools.pairwise(fits))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(fits))
    eps0 = norm.cdf(-m_y / s_y)  # the switch point: the MLE just satisfies the constraint
    mu, sigma = constrained_fit(m_y, s_y**2, leakage_quantile(eps0 * (1 - 1e-9)))
    assert (mu, sigma) == pytest.approx((m_y, s_y), abs=1e-6)
    # Lemma 1: m_eps -> m_Y + sigma_Y^2 / m_Y = 4.1667; at 1e-15 it is 3.9977 with sigma 0.503
    mu, sigma = constrained_fit(m_y, s_y**2, leakage_quantile(1e-15))
    assert (mu, sigma) == pytest.approx((3.9977, 0.503), abs=1e-3)


def _partition_cost(Y: list[np.ndarray], eps: float) -> tuple[list[float], float]:
    """H_i = C_eps(first coordinate) + ((D-1)/2) ln(2 pi e) + 1/2 ln det S_rest and
    E = sum_i p_i (-ln p_i + H_i)."""
    q = leakage_quantile(eps)
    n = sum(y.shape[0] for y in Y)
    hs, total = [], 0.0
    for y in Y:
        rest = np.atleast_2d(np.cov(y[:, 1:].T, bias=True))
        h = side_cost(y[:, 0].mean(), y[:, 0].var(), q) + (y.shape[1] - 1) * HALF_LOG_2PIE
        h += 0.5 * np.linalg.slogdet(rest)[1]
        p = y.shape[0] / n
        hs.append(h)
        total += p * (-math.log(p) + h)
    return hs, total


def test_fixed_partition_cost_table() -> None:
    Y1 = np.array([[1, 0], [2, 1], [3, -1], [-0.5, 0.5]])
    Y2 = np.array([[-2, 1], [-3, 2], [-1, 0], [-2.5, -1]])
    for eps, h1, energy in ((0.5, 2.7930824310, 3.4135290616), (0.3, 2.7930824310, 3.4135290616),
                            (0.1, 2.8081486099, 3.4210621511), (0.05, 2.8986383624, 3.4663070273),
                            (0.01, 3.2793658632, 3.6566707778)):  # fmt: skip
        (got1, got2), total = _partition_cost([Y1, Y2], eps)
        assert got1 == pytest.approx(h1, abs=1e-9)
        assert got2 == pytest.approx(2.6476813311, abs=1e-9)
        assert total == pytest.approx(energy, abs=1e-9)


def test_three_dimensional_single_cluster() -> None:
    Y = np.array([[0.6, -1.04, 0.75], [1.24, -1.95, -1.3], [0.43, -0.32, -0.02],
                  [-0.55, 0.88, 0.78], [0.37, 1.13, 0.47], [-0.56, 0.37, -0.96]])  # fmt: skip
    assert _partition_cost([Y], 0.5)[1] == pytest.approx(3.5479450094, abs=1e-9)
    assert _partition_cost([Y], 0.05)[1] == pytest.approx(4.2621902997, abs=1e-9)
