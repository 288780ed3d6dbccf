"""Measures read from contingency tables (summed over chunks) equal scikit-learn's on the whole
arrays, and the label-pair counts equal a brute-force listing of the pairs."""

import itertools

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from app.engine.core.contingency import (
    ari_from_contingency,
    contingency,
    label_pair_counts,
    nmi_from_contingency,
    padded_sum,
)
from app.engine.core.numbering import numbering_like


def _chunked_table(a: np.ndarray, b: np.ndarray, n_chunks: int) -> np.ndarray:
    """The table as a data-parallel run builds it: one per chunk, each of its own shape."""
    tables = []
    for part_a, part_b in zip(
        np.array_split(a, n_chunks), np.array_split(b, n_chunks), strict=True
    ):
        shape = (int(part_a.max(initial=-1)) + 1, int(part_b.max(initial=-1)) + 1)
        tables.append(contingency(part_a, part_b, shape))
    return padded_sum(tables)


CASES = {
    "random": (
        np.random.default_rng(0).integers(0, 5, 500),
        np.random.default_rng(1).integers(0, 3, 500),
    ),
    "identical": (np.repeat(np.arange(4), 25), np.repeat(np.arange(4), 25)),
    "renamed": (np.repeat(np.arange(4), 25), np.repeat(np.arange(4)[::-1], 25)),
    "one cluster": (np.zeros(50, dtype=int), np.random.default_rng(2).integers(0, 3, 50)),
    "both one": (np.zeros(30, dtype=int), np.zeros(30, dtype=int)),
    "all apart": (np.arange(40), np.random.default_rng(3).integers(0, 4, 40)),
    "gaps in numbers": (np.array([0, 0, 7, 7, 9, 9]), np.array([2, 2, 5, 5, 5, 0])),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_ari_and_nmi_match_scikit_learn(name: str, n_chunks: int) -> None:
    truth, labels = CASES[name]
    table = _chunked_table(truth, labels, n_chunks)
    assert ari_from_contingency(table) == pytest.approx(
        adjusted_rand_score(truth, labels), abs=1e-12
    )
    want = normalized_mutual_info_score(truth, labels, average_method="arithmetic")
    assert nmi_from_contingency(table) == pytest.approx(want, abs=1e-12)


def test_ari_stays_exact_where_pair_products_overflow_int64() -> None:
    # 20M items in four equal true groups, clustered perfectly but for 1,000 moved items.
    quarter = 5_000_000
    table = np.diag([quarter] * 4).astype(np.int64)
    table[0, 0] -= 1_000
    table[0, 1] += 1_000
    value = ari_from_contingency(table)
    assert 0.999 < value < 1.0


def test_label_pair_counts_equal_the_listed_pairs() -> None:
    rng = np.random.default_rng(4)
    clusters, labels = rng.integers(0, 4, 60), rng.integers(0, 3, 60)
    same_label = same_both = different = apart = 0
    for i, j in itertools.combinations(range(60), 2):
        if labels[i] == labels[j]:
            same_label += 1
            same_both += clusters[i] == clusters[j]
        else:
            different += 1
            apart += clusters[i] != clusters[j]
    table = _chunked_table(clusters, labels, 4)
    assert label_pair_counts(table) == (same_label, same_both, different, apart)


def test_negative_values_are_not_counted() -> None:
    table = contingency(np.array([0, -1, 1, 1]), np.array([1, 0, -1, 0]), (2, 2))
    np.testing.assert_array_equal(table, [[0, 1], [1, 0]])


def test_numbering_from_chunk_tables_is_the_whole_arrays_numbering() -> None:
    from app.engine.core.numbering import numbering_from_overlap

    rng = np.random.default_rng(5)
    reference = rng.integers(0, 6, 1000)
    labels = (reference + 2) % 6
    labels[rng.random(1000) < 0.1] = rng.integers(0, 6)
    k = int(labels.max()) + 1
    tables = [
        contingency(part_l, np.where(part_r < k, part_r, -1), (k, k))
        for part_l, part_r in zip(
            np.array_split(labels, 3), np.array_split(reference, 3), strict=True
        )
    ]
    np.testing.assert_array_equal(
        numbering_from_overlap(padded_sum(tables)), numbering_like(labels, reference)
    )
