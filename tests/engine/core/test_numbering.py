"""numbering_like: renumber a partition to agree with an earlier one on the most items."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.engine.core.numbering import numbering_like


def _agreement(order: np.ndarray, labels: np.ndarray, reference: np.ndarray) -> int:
    keep = (labels >= 0) & (reference >= 0)
    return int(np.sum(order[labels[keep]] == reference[keep]))


@pytest.mark.parametrize("seed", range(60))
def test_agrees_on_as_many_items_as_the_best_permutation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    k, k_ref = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    labels = rng.integers(0, k, n)
    reference = rng.integers(-1, k_ref, n)  # -1: an item without a cluster there
    order = numbering_like(labels, reference)
    size = int(labels.max()) + 1
    assert sorted(order.tolist()) == list(range(size))  # a permutation of 0..k-1
    best = max(
        _agreement(np.array(p), labels, reference) for p in itertools.permutations(range(size))
    )
    assert _agreement(order, labels, reference) == best


def test_a_renumbered_copy_gets_its_numbers_back() -> None:
    reference = np.array([0, 0, 1, 1, 2, 2, 2])
    shuffled = np.array([2, 0, 1])[reference]
    order = numbering_like(shuffled, reference)
    np.testing.assert_array_equal(order[shuffled], reference)


def test_fewer_clusters_use_only_their_own_numbers() -> None:
    # Reference clusters 0..3; the new result has 2 clusters, the larger matching reference 3.
    reference = np.array([3, 3, 3, 3, 1, 1, 0, 2])
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    order = numbering_like(labels, reference)
    assert sorted(order.tolist()) == [0, 1]
    assert order[1] == 1  # the reference's cluster 1 shares 2 items; number 3 does not exist


def test_clusters_sharing_nothing_take_the_free_numbers_in_order() -> None:
    reference = np.array([1, 1, -1, -1, -1])
    labels = np.array([2, 2, 0, 1, 3])
    order = numbering_like(labels, reference)
    assert order[2] == 1
    np.testing.assert_array_equal(order[[0, 1, 3]], [0, 2, 3])


def test_no_overlap_keeps_the_numbers_and_bad_shapes_are_refused() -> None:
    np.testing.assert_array_equal(numbering_like([0, 1, 2], [-1, -1, -1]), [0, 1, 2])
    assert numbering_like(np.zeros(0, dtype=int), np.zeros(0, dtype=int)).size == 0
    with pytest.raises(ValueError, match="one length"):
        numbering_like([0, 1], [0, 1, 2])
