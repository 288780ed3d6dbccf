"""The four 2-D toy sets of the SMIC paper (Sec. 4.1), regenerated from their text descriptions.

Spec smic.md Sec. 6.1 and decisions A13: fixed class sizes n * pi_y, circle points equidistant at
angles 2 pi k / n_2, and the literal reading of the spiral formulas (index i runs over 1..n/2 in
each class, divisor is the total n). Standardisation is left to the estimator.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

TOY_SETS = ("four_blobs", "circle_gaussian", "double_spirals", "high_low_densities")
TOY_CLUSTERS = {"four_blobs": 4, "circle_gaussian": 2, "double_spirals": 2, "high_low_densities": 2}


def _labels(sizes: list[int]) -> IntArray:
    return np.repeat(np.arange(len(sizes), dtype=np.intp), sizes)


def four_blobs(n: int, rng: np.random.RandomState) -> tuple[FloatArray, IntArray]:
    """Means (2,2), (-2,2), (2,-2), (-2,-2); covariance 0.25 I."""
    means = np.array([[2.0, 2.0], [-2.0, 2.0], [2.0, -2.0], [-2.0, -2.0]])
    sizes = [n // 4 + (1 if k < n % 4 else 0) for k in range(4)]
    y = _labels(sizes)
    return means[y] + 0.5 * rng.standard_normal((n, 2)), y


def circle_gaussian(n: int, rng: np.random.RandomState) -> tuple[FloatArray, IntArray]:
    """N(0, I) and n/2 points equidistant on the radius-5 circle, then N(0, 0.01 I) noise."""
    n1 = n - n // 2
    n2 = n // 2
    angles = 2.0 * np.pi * np.arange(n2) / n2
    ring = 5.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    X = np.vstack([rng.standard_normal((n1, 2)), ring])
    return X + 0.1 * rng.standard_normal((n, 2)), _labels([n1, n2])


def double_spirals(n: int, rng: np.random.RandomState) -> tuple[FloatArray, IntArray]:
    """(l_i cos m_i, l_i sin m_i) and its negation, l_i = 1 + 4(i-1)/n, m_i = 3 pi (i-1)/n."""
    half = n // 2
    i = np.arange(half, dtype=np.float64)  # i - 1 for i = 1..n/2
    arm = (1.0 + 4.0 * i / n)[:, None] * np.column_stack(
        [np.cos(3.0 * np.pi * i / n), np.sin(3.0 * np.pi * i / n)]
    )
    X = np.vstack([arm, -arm])
    return X + 0.1 * rng.standard_normal(X.shape), _labels([half, half])


def high_low_densities(n: int, rng: np.random.RandomState) -> tuple[FloatArray, IntArray]:
    """N(0, I) and N(0, 0.01 I)."""
    n1 = n - n // 2
    n2 = n // 2
    X = np.vstack([rng.standard_normal((n1, 2)), 0.1 * rng.standard_normal((n2, 2))])
    return X, _labels([n1, n2])


def make_toy(name: str, n: int = 200, seed: int = 0) -> tuple[FloatArray, IntArray]:
    """One draw of toy set `name` (one of TOY_SETS) with n points; returns (X, true labels)."""
    generators = {
        "four_blobs": four_blobs,
        "circle_gaussian": circle_gaussian,
        "double_spirals": double_spirals,
        "high_low_densities": high_low_densities,
    }
    if name not in generators:
        raise ValueError(f"unknown toy set {name!r}; choose one of {TOY_SETS}")
    return generators[name](n, np.random.RandomState(seed))


def gaussian_mixture(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n points from k Gaussian components with random centres (scale 4) and random
    covariances in d dimensions, and each point's component: the benchmarks' standard load."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(k, d))
    component = rng.integers(0, k, size=n)
    X = np.empty((n, d))
    for c in range(k):
        rows = component == c
        shape = rng.normal(scale=0.5, size=(d, d)) + np.eye(d)
        X[rows] = centers[c] + rng.normal(size=(int(rows.sum()), d)) @ shape.T
    return X, component
