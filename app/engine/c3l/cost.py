"""C3L's one-dimensional constrained fit: Theorem 1 as rebuilt in spec c3l.md Sec. 2.7.

For data on the decision coordinate with mean m and variance v = sigma^2, and q = q_eps =
-Phi^{-1}(eps) (q <= 0 means eps >= 1/2, no constraint), the Gaussian N(mu, s^2) closest in
cross-entropy subject to leakage Phi(-|mu|/s) <= eps is

* inactive (|m| >= q sigma): mu = m, s = sigma, cost 1/2 ln(2 pi e) + ln sigma;
* active: s = 2c / (q a + sqrt(q^2 a^2 + 4c)) with a = |m|, c = m^2 + v (the stable root of
  s^2 + q a s = c), mu = sgn(m) q s (sgn(0) = +1), cost 1/2 ln(2 pi e) + ln s + q^2/2 - q a/(2s).

A zero variance has no finite cost (+inf): the caller keeps a ridge or forbids such clusters.
"""

from __future__ import annotations

import math

import numba
from scipy.stats import norm

from app.engine.core.families import HALF_LOG_2PIE


def leakage_quantile(leakage: float) -> float:
    """q_eps = -Phi^{-1}(eps) via ``isf`` (no loss of precision for small eps); 0 for eps >= 1/2."""
    return float(norm.isf(leakage)) if leakage < 0.5 else 0.0


@numba.njit(nogil=True, cache=True)
def constrained_fit(mean: float, var: float, q: float) -> tuple[float, float]:
    """(mu, s) of the constrained optimum; s = 0 if ``var <= 0``."""
    if not (var > 0.0):
        return mean, 0.0
    sigma = math.sqrt(var)
    a = abs(mean)
    if q <= 0.0 or a >= q * sigma:
        return mean, sigma
    c = mean * mean + var
    s = 2.0 * c / (q * a + math.sqrt(q * q * a * a + 4.0 * c))
    return (q * s if mean >= 0.0 else -q * s), s


@numba.njit(nogil=True, cache=True)
def side_cost(mean: float, var: float, q: float) -> float:
    """C_eps(m, sigma): the constrained cross-entropy of the decision coordinate (nats)."""
    if not (var > 0.0):
        return math.inf
    sigma = math.sqrt(var)
    a = abs(mean)
    if q <= 0.0 or a >= q * sigma:
        return HALF_LOG_2PIE + math.log(sigma)
    c = mean * mean + var
    s = 2.0 * c / (q * a + math.sqrt(q * q * a * a + 4.0 * c))
    return HALF_LOG_2PIE + math.log(s) + 0.5 * q * q - q * a / (2.0 * s)


def leakage_of(mean: float, var: float, q: float) -> float:
    """Mass of the fitted constrained Gaussian on the other side of the boundary."""
    mu, s = constrained_fit(mean, var, q)
    if s <= 0.0:
        return 0.0 if mu != 0.0 else 0.5
    return float(norm.cdf(-abs(mu) / s))
