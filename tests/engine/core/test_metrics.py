"""Engine metrics against their definitions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from app.engine import (
    adjusted_rand_index,
    label_constraint_satisfaction,
    normalized_mutual_info,
    pairwise_constraint_satisfaction,
)


def _entropy(labels: np.ndarray) -> float:
    p = np.bincount(labels) / labels.size
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def test_nmi_is_two_mi_over_entropy_sum() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, size=200)
    b = (a + (rng.random(200) < 0.3) * rng.integers(1, 4, size=200)) % 4
    joint = a * 4 + b
    mi = _entropy(a) + _entropy(b) - _entropy(joint)
    expected = 2 * mi / (_entropy(a) + _entropy(b))
    assert normalized_mutual_info(a, b) == pytest.approx(expected, rel=1e-12)
    assert normalized_mutual_info(a, a) == pytest.approx(1.0)
    assert normalized_mutual_info(a, 7 - a) == pytest.approx(1.0)
    assert normalized_mutual_info([0, 0, 1, 1], [0, 0, 0, 0]) == 0.0
    # different cluster counts: below 1 (spec Sec. 5.3)
    assert normalized_mutual_info([0, 0, 1, 1], [0, 1, 2, 3]) == pytest.approx(
        2 * math.log(2) / (math.log(2) + math.log(4))
    )


def test_ari_known_values() -> None:
    assert adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    # Hubert-Arabie example: [0,0,1,1] vs [0,0,1,2]
    assert adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(4 / 7)


def test_pairwise_constraint_satisfaction() -> None:
    labels = np.array([0, 0, 1, 1, 2])
    result = pairwise_constraint_satisfaction(
        labels, must_link=[[0, 1], [1, 2]], cannot_link=[[0, 4], [2, 3], [3, 4]]
    )
    assert result.must_link == 0.5
    assert result.cannot_link == pytest.approx(2 / 3)
    assert result.overall == pytest.approx(3 / 5)
    empty = pairwise_constraint_satisfaction(labels)
    assert math.isnan(empty.must_link) and math.isnan(empty.overall)
    with pytest.raises(ValueError, match="index pairs"):
        pairwise_constraint_satisfaction(labels, must_link=[0, 1, 2])


def test_label_constraint_satisfaction_equals_listing_all_pairs() -> None:
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, size=40)
    y = np.where(rng.random(40) < 0.6, rng.integers(0, 3, size=40), -1)
    labeled = np.flatnonzero(y >= 0)
    pairs = list(itertools.combinations(labeled, 2))
    ml = [p for p in pairs if y[p[0]] == y[p[1]]]
    cl = [p for p in pairs if y[p[0]] != y[p[1]]]
    expected = pairwise_constraint_satisfaction(labels, ml, cl)
    got = label_constraint_satisfaction(labels, y)
    assert got.must_link == pytest.approx(expected.must_link)
    assert got.cannot_link == pytest.approx(expected.cannot_link)
    assert got.overall == pytest.approx(expected.overall)
    with pytest.raises(ValueError, match="same shape"):
        label_constraint_satisfaction(labels, y[:-1])
