"""Clustering measures from contingency tables, so they can be summed over chunks.

A data-parallel run never holds its labels in one place: each chunk counts its items per
(cluster, class) cell, the counts are added, and ARI, NMI, the label-pair rates and the numbering
are read from the sum. The label-pair rates and the numbering of whole arrays (`metrics.py`,
`numbering.py`) build the table and call these; ARI and NMI are checked against scikit-learn's,
which the whole-array route calls.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

Table = NDArray[np.int64]


def contingency(rows: ArrayLike, columns: ArrayLike, shape: tuple[int, int]) -> Table:
    """Counts of (rows[i], columns[i]) over items whose both values are >= 0, as a table of
    ``shape`` (every value must be below it)."""
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(columns, dtype=np.int64)
    keep = (r >= 0) & (c >= 0)
    cells = r[keep] * shape[1] + c[keep]  # bincount: np.add.at is 10x slower at 1M items
    return np.bincount(cells, minlength=shape[0] * shape[1]).reshape(shape).astype(np.int64)


def padded_sum(tables: list[Table]) -> Table:
    """The cell-wise sum of tables of different shapes (missing cells count 0)."""
    rows = max((t.shape[0] for t in tables), default=0)
    columns = max((t.shape[1] for t in tables), default=0)
    total = np.zeros((rows, columns), dtype=np.int64)
    for t in tables:
        total[: t.shape[0], : t.shape[1]] += t
    return total


def _pairs(counts: NDArray[np.int64]) -> int:
    return sum(int(c) * (int(c) - 1) // 2 for c in counts.ravel() if c > 1)


def ari_from_contingency(table: Table) -> float:
    """The adjusted Rand index of the two partitions a table counts (scikit-learn's
    ``adjusted_rand_score``, including its value 1 when no pair is split differently)."""
    n = int(table.sum())
    both = _pairs(table)
    first = _pairs(table.sum(axis=1))
    second = _pairs(table.sum(axis=0))
    total = n * (n - 1) // 2
    # The pair confusion counts, in Python integers (products overflow int64 at 20M items).
    tp, fn, fp = both, first - both, second - both
    tn = total - tp - fn - fp
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def _entropy(counts: NDArray[np.int64]) -> float:
    counts = counts[counts > 0].astype(np.float64)
    if counts.size <= 1:
        return 0.0
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def nmi_from_contingency(table: Table) -> float:
    """2 I / (H_rows + H_columns), as scikit-learn's arithmetic-mean NMI (1 when neither
    partition splits the items, 0 when exactly one does not)."""
    row_sums, column_sums = table.sum(axis=1), table.sum(axis=0)
    n_rows, n_columns = np.count_nonzero(row_sums), np.count_nonzero(column_sums)
    if n_rows == n_columns == 1 or n_rows == n_columns == 0:
        return 1.0
    n = float(table.sum())
    i, j = np.nonzero(table)
    cells = table[i, j].astype(np.float64)
    outer = row_sums[i].astype(np.float64) * column_sums[j].astype(np.float64)
    mi = max(float(np.sum(cells / n * (np.log(cells) + math.log(n) - np.log(outer)))), 0.0)
    if mi == 0.0:
        return 0.0
    return mi / ((_entropy(row_sums) + _entropy(column_sums)) / 2)


def label_pair_counts(table: Table) -> tuple[int, int, int, int]:
    """From a (cluster x label) table of the labeled items: the pairs with one label, the pairs
    with one label in one cluster, the pairs with different labels, and those of them in
    different clusters. (Every two labeled items are a must-link if their labels agree and a
    cannot-link otherwise.)"""
    total = _pairs(np.array([table.sum()]))
    same_label = _pairs(table.sum(axis=0))
    same_cluster = _pairs(table.sum(axis=1))
    same_both = _pairs(table)
    different = total - same_label
    return same_label, same_both, different, different - (same_cluster - same_both)
