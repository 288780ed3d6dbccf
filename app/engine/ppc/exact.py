"""Exact PPC E-step engines (specs/ppc.md Sec. 3.3), all in the log domain.

* ``tree_sum_product``: sum-product belief propagation on tree components (Sec. 3.3.6). It is
  exact and covers the paper's closed forms: a non-overlapping pair (Sec. 3.3.2) and a star
  (Sec. 3.3.4) are trees, and a hard-link chunklet (Sec. 3.3.3) is a contracted single node.
  Every pairwise message is ``log sum_{k'} exp(b(k') + J [k = k'])`` taken term by term (the
  diagonal term left out for a hard do-not-link), which avoids the cancellation of the printed
  ``U - u`` forms.
* ``enumerate_components``: exact sums over a small loopy component (Sec. 3.3.5): brute force
  over all M^|T| configurations, or over colour classes (``colour_classes``) when that is
  cheaper (M = 10, |T| = 6: 22 thousand terms instead of 2 million).

Both write the marginals of their nodes into ``marg`` and return log Z per component; an
infeasible component (hard do-not-links that no labelling satisfies) has log Z = -inf.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.ppc.colour_classes import cheaper_than_enumeration, colour_class_sums
from app.engine.ppc.graph import ExactSet


@numba.njit(nogil=True, cache=True)
def _pair_message(b: FloatArray, J: float, hard: bool, out: FloatArray) -> None:
    """``out[k] = log sum_{k'} exp(b[k'] + J [k = k'])``; the k' = k term dropped if hard."""
    m = b.shape[0]
    for k in range(m):
        top = -math.inf
        for q in range(m):
            if q == k:
                if hard:
                    continue
                v = b[q] + J
            else:
                v = b[q]
            top = max(top, v)
        total = 0.0
        if top > -math.inf:
            for q in range(m):
                if q == k:
                    if hard:
                        continue
                    total += math.exp(b[q] + J - top)
                else:
                    total += math.exp(b[q] - top)
            out[k] = top + math.log(total)
        else:
            out[k] = -math.inf


@numba.njit(nogil=True, cache=True)
def _normalise_log(row: FloatArray, out: FloatArray) -> float:
    """``out = softmax(row)``; returns logsumexp(row) (-inf leaves ``out`` at zero)."""
    top = -math.inf
    for k in range(row.shape[0]):
        top = max(top, row[k])
    if top == -math.inf:
        out[:] = 0.0
        return -math.inf
    total = 0.0
    for k in range(row.shape[0]):
        out[k] = math.exp(row[k] - top)
        total += out[k]
    for k in range(row.shape[0]):
        out[k] /= total
    return top + math.log(total)


@numba.njit(nogil=True, cache=True)
def tree_sum_product(
    a: FloatArray,
    ptr: IntArray,
    order: IntArray,
    parent: IntArray,
    pJ: FloatArray,
    phard: BoolArray,
    marg: FloatArray,
    logz: FloatArray,
    decode: IntArray,
) -> None:
    """Marginals and log Z of every tree; ``decode`` is a joint labelling that respects hard
    do-not-links (root argmax, then each child's argmax given its parent's label)."""
    n_pos = order.shape[0]
    m = a.shape[1]
    up = np.empty((n_pos, m))
    msg = np.empty((n_pos, m))
    full = np.empty((n_pos, m))
    lab = np.empty(n_pos, dtype=np.int64)
    work = np.empty(m)
    for p in range(n_pos):
        for k in range(m):
            up[p, k] = a[order[p], k]
    for p in range(n_pos - 1, -1, -1):  # children come after their parent in BFS order
        q = parent[p]
        if q >= 0:
            _pair_message(up[p], pJ[p], phard[p], msg[p])
            for k in range(m):
                up[q, k] += msg[p, k]
    for t in range(ptr.shape[0] - 1):
        for p in range(ptr[t], ptr[t + 1]):
            q = parent[p]
            if q < 0:
                for k in range(m):
                    full[p, k] = up[p, k]
                logz[t] = _normalise_log(full[p], marg[order[p]])
                best = 0
                for k in range(m):
                    if full[p, k] > full[p, best]:
                        best = k
                lab[p] = best
            else:
                for k in range(m):
                    # the parent's belief without this child's message; where that message
                    # is -inf (a clamped child), every joint term with the parent at k is -inf
                    # whatever the cavity, so -inf avoids -inf - -inf
                    work[k] = -math.inf if msg[p, k] == -math.inf else full[q, k] - msg[p, k]
                _pair_message(work, pJ[p], phard[p], full[p])
                for k in range(m):
                    full[p, k] += up[p, k]
                _normalise_log(full[p], marg[order[p]])
                best = -1
                for k in range(m):
                    if phard[p] and k == lab[q]:
                        continue
                    v = up[p, k] + (pJ[p] if k == lab[q] else 0.0)
                    if best < 0 or v > up[p, best] + (pJ[p] if best == lab[q] else 0.0):
                        best = k
                lab[p] = best
            decode[order[p]] = lab[p]


@numba.njit(nogil=True, cache=True)
def _config_score(
    a: FloatArray,
    nodes: IntArray,
    z: IntArray,
    u: IntArray,
    v: IntArray,
    J: FloatArray,
    hard: BoolArray,
    e0: int,
    e1: int,
) -> float:
    score = 0.0
    for j in range(nodes.shape[0]):
        score += a[nodes[j], z[j]]
    for e in range(e0, e1):
        if z[u[e]] == z[v[e]]:
            if hard[e]:
                return -math.inf
            score += J[e]
    return score


@numba.njit(nogil=True, cache=True)
def enumerate_components(
    a: FloatArray,
    ptr: IntArray,
    nodes: IntArray,
    eptr: IntArray,
    u: IntArray,
    v: IntArray,
    J: FloatArray,
    hard: BoolArray,
    marg: FloatArray,
    logz: FloatArray,
    decode: IntArray,
) -> None:
    """Exact sums per component; ``decode`` gets the joint MAP. Brute force over the M^|T|
    labellings, or over colour classes (``colour_classes``) where that is cheaper."""
    m = a.shape[1]
    for c in range(ptr.shape[0] - 1):
        comp = nodes[ptr[c] : ptr[c + 1]]
        t = comp.shape[0]
        if cheaper_than_enumeration(m, t):
            logz[c] = colour_class_sums(a, comp, u, v, J, hard, eptr[c], eptr[c + 1], marg, decode)
            continue
        total = m**t
        z = np.zeros(t, dtype=np.int64)
        top = -math.inf
        for _ in range(total):
            s = _config_score(a, comp, z, u, v, J, hard, eptr[c], eptr[c + 1])
            if s > top:
                top = s
                for j in range(t):
                    decode[comp[j]] = z[j]
            _increment(z, m)
        for j in range(t):
            marg[comp[j], :] = 0.0
        if top == -math.inf:
            logz[c] = -math.inf
            continue
        acc = 0.0
        for _ in range(total):
            s = _config_score(a, comp, z, u, v, J, hard, eptr[c], eptr[c + 1])
            if s > -math.inf:
                w = math.exp(s - top)
                acc += w
                for j in range(t):
                    marg[comp[j], z[j]] += w
            _increment(z, m)
        for j in range(t):
            for k in range(m):
                marg[comp[j], k] /= acc
        logz[c] = top + math.log(acc)


@numba.njit(nogil=True, cache=True)
def _increment(z: IntArray, m: int) -> None:
    """Next labelling in odometer order (wraps around to all zeros)."""
    for j in range(z.shape[0]):
        z[j] += 1
        if z[j] < m:
            return
        z[j] = 0


def solve_exact(
    exact: ExactSet, a: FloatArray, marg: FloatArray, decode: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Run both engines; returns log Z of the trees and of the enumerated components."""
    tree_logz = np.empty(exact.n_trees)
    enum_logz = np.empty(exact.n_enum)
    if exact.n_trees:
        tree_sum_product(
            a,
            exact.tree_ptr,
            exact.tree_order,
            exact.tree_parent,
            exact.tree_J,
            exact.tree_hard,
            marg,
            tree_logz,
            decode,
        )
    if exact.n_enum:
        enumerate_components(
            a,
            exact.enum_ptr,
            exact.enum_nodes,
            exact.enum_eptr,
            exact.enum_u,
            exact.enum_v,
            exact.enum_J,
            exact.enum_hard,
            marg,
            enum_logz,
            decode,
        )
    return tree_logz, enum_logz
