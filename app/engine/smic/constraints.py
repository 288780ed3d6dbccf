"""Must-link / cannot-link side information for SMIC as kernel edits (an extension, not the paper).

Spec smic.md Sec. 4.2, hooks 1-3: must-links are closed transitively into chunklets and every
chunklet becomes a clique of weight 1 (the largest entry of eq. 7); a cannot-link zeroes every
kernel entry between the two chunklets it separates. SMIC then runs unchanged on the edited K.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.sparse.csgraph import connected_components

from app.engine.arrays import IndexArray
from app.engine.side_info import PAIRS_NAME_ROWS


@dataclass(frozen=True)
class Constraints:
    must_link: IndexArray  # (m, 2)
    cannot_link: IndexArray  # (m', 2)
    chunklet: IndexArray  # chunklet id per point; singletons have their own id

    @property
    def empty(self) -> bool:
        return self.must_link.shape[0] == 0 and self.cannot_link.shape[0] == 0


def validate_pairs(pairs: ArrayLike | None, n: int, name: str) -> IndexArray:
    """An (m, 2) integer array of indices into the n rows of X, or a ValueError naming the pair."""
    if pairs is None:
        return np.empty((0, 2), dtype=np.intp)
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.intp)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (m, 2), got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer point indices, got dtype {arr.dtype}")
    bad_rows = np.flatnonzero(((arr < 0) | (arr >= n)).any(axis=1))
    if bad_rows.size:
        k = int(bad_rows[0])
        i, j = (int(v) for v in arr[k])
        raise ValueError(
            f"{name}[{k}] = ({i}, {j}) is out of range: X has {n} rows, valid indices are "
            f"0..{n - 1}{PAIRS_NAME_ROWS}"
        )
    return arr.astype(np.intp)


def compile_constraints(
    must_link: ArrayLike | None, cannot_link: ArrayLike | None, n: int
) -> Constraints:
    ml = validate_pairs(must_link, n, "must_link")
    cl = validate_pairs(cannot_link, n, "cannot_link")
    graph = sp.csr_matrix((np.ones(ml.shape[0]), (ml[:, 0], ml[:, 1])), shape=(n, n))
    _, chunklet = connected_components(graph, directed=False)
    chunklet = chunklet.astype(np.intp)
    clash = np.flatnonzero(chunklet[cl[:, 0]] == chunklet[cl[:, 1]])
    if clash.size:
        k = int(clash[0])
        i, j = (int(v) for v in cl[k])
        why = (
            "links a point to itself"
            if i == j
            else "joins two points that must-links put in the same chunklet"
        )
        raise ValueError(f"cannot_link[{k}] = ({i}, {j}) {why}; the constraints conflict")
    return Constraints(must_link=ml, cannot_link=cl, chunklet=chunklet)


def _chunklet_cliques(chunklet: IndexArray) -> sp.csr_matrix:
    """Ones on every pair inside a chunklet of size >= 2: sum of squared sizes entries."""
    n = chunklet.shape[0]
    rows: list[IndexArray] = []
    cols: list[IndexArray] = []
    ids, sizes = np.unique(chunklet, return_counts=True)
    for cid in ids[sizes > 1]:
        members = np.flatnonzero(chunklet == cid)
        r, c = np.meshgrid(members, members, indexing="ij")
        rows.append(r.ravel())
        cols.append(c.ravel())
    if not rows:
        return sp.csr_matrix((n, n))
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(r_all.size), (r_all, c_all)), shape=(n, n))


def edit_kernel(K: sp.csr_matrix, constraints: Constraints) -> sp.csr_matrix:
    """Must-link chunklets -> entries 1; entries between cannot-linked chunklets -> 0."""
    if constraints.empty:
        return K
    edited = sp.csr_matrix(K.maximum(_chunklet_cliques(constraints.chunklet))).tocoo()
    cl = constraints.cannot_link
    if cl.shape[0]:
        cid = constraints.chunklet.astype(np.int64)
        n_ids = int(cid.max()) + 1
        a, b = cid[cl[:, 0]], cid[cl[:, 1]]
        forbidden = np.concatenate([a * n_ids + b, b * n_ids + a])
        keys = cid[edited.row] * n_ids + cid[edited.col]
        edited.data[np.isin(keys, forbidden)] = 0.0
    result = sp.csr_matrix(edited)
    result.eliminate_zeros()
    return result


def count_violations(labels: IndexArray, constraints: Constraints) -> int:
    """Must-links split across clusters plus cannot-links inside one cluster."""
    ml, cl = constraints.must_link, constraints.cannot_link
    broken = np.count_nonzero(labels[ml[:, 0]] != labels[ml[:, 1]])
    return int(broken + np.count_nonzero(labels[cl[:, 0]] == labels[cl[:, 1]]))
