"""The statistics a data-parallel pass sums over chunks, and the parameters it freezes from them.

``Totals`` are additive: every chunk returns one, the driver adds them in chunk order (so the
result does not depend on which worker ran which chunk) and recomputes each cluster's weight,
mean and covariance from the sums. ``Frozen`` is what the next pass holds fixed while it
assigns items: per cluster the constant of its cost, the mean, the precision factor and the
cost of a label (``chunk_kernels.assign_chunk``). ``energy`` is the exact CEC-IB energy of
eq. (10) of the partition the totals describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.engine.arrays import BoolArray, FloatArray
from app.engine.core.cec_state import ClusterState, new_state, refresh_energy, xlogx
from app.engine.core.families import DIAGONAL, FULL, family_entropy

LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class Totals:
    """Weighted sums of one partition's clusters, centred on ``shift`` (k, d)."""

    shift: FloatArray
    count: FloatArray  # (k,)
    s1: FloatArray  # (k, d)
    s2: FloatArray  # (k, d, d); only the lower triangle is read (the kernels fill it all)
    label_counts: FloatArray  # (k, m), weighted

    @classmethod
    def zeros(cls, shift: FloatArray, n_categories: int) -> Totals:
        k, d = shift.shape
        return cls(
            shift,
            np.zeros(k),
            np.zeros((k, d)),
            np.zeros((k, d, d)),
            np.zeros((k, max(n_categories, 1))),
        )

    def add(self, other: Totals) -> None:
        self.count += other.count
        self.s1 += other.s1
        self.s2 += other.s2
        self.label_counts += other.label_counts

    def moments(self) -> tuple[FloatArray, FloatArray]:
        """Each cluster's mean and MLE covariance (zeros for an empty one)."""
        safe = np.where(self.count > 0, self.count, 1.0)
        offset = self.s1 / safe[:, None]
        lower = self.s2 / safe[:, None, None]
        full = np.tril(lower) + np.tril(lower, -1).transpose(0, 2, 1)
        cov = full - offset[:, :, None] * offset[:, None, :]
        cov[self.count <= 0] = 0.0
        return self.shift + offset, np.ascontiguousarray(cov)


def family_entropies(family: int, cov: FloatArray, alive: BoolArray) -> FloatArray:
    """H(N(m, S)) of each live cluster in the family; +inf when singular, 0 when dead."""
    k, d = cov.shape[:2]
    out = np.zeros(k)
    scratch = np.zeros((2, d, d))
    for c in range(k):
        if alive[c]:
            out[c] = family_entropy(family, np.ascontiguousarray(cov[c]), scratch[0], scratch[1])
    return out


def label_entropies(label_counts: FloatArray) -> FloatArray:
    """h(Y) = H(Z | Y cap X_l) per cluster from its (weighted) label counts; 0 without labels."""
    labeled = label_counts.sum(axis=1)
    out = np.zeros(label_counts.shape[0])
    for c in np.flatnonzero(labeled > 0):
        t = sum(xlogx(float(v)) for v in label_counts[c])
        out[c] = max(math.log(labeled[c]) - t / labeled[c], 0.0)
    return out


def energy(totals: Totals, alive: BoolArray, family: int, beta: float, n_total: float) -> float:
    """E = sum_c p_c (-ln p_c + H_c + beta h_c) over the live, non-empty clusters (eq. 10)."""
    _, cov = totals.moments()
    live = alive & (totals.count > 0)
    entropies = family_entropies(family, cov, live)
    h = label_entropies(totals.label_counts) if beta != 0.0 else np.zeros(live.shape[0])
    p = totals.count[live] / n_total
    return float((p * (-np.log(p) + entropies[live] + beta * h[live])).sum())


@dataclass(frozen=True)
class Frozen:
    """The parameters one pass holds fixed (``chunk_kernels.assign_chunk``'s inputs)."""

    alive: BoolArray
    const: FloatArray  # (k,)
    means: FloatArray  # (k, d)
    factor: FloatArray  # (k, d, d) lower-triangular precision factors
    label_cost: FloatArray  # (k, m)
    # (k,) at most the smallest and at least the largest eigenvalue of each S_c^-1 (lower and
    # upper bounds of the Mahalanobis term from the Euclidean distance,
    # chunk_kernels.assign_chunk)
    min_precision: FloatArray
    max_precision: FloatArray


# The Euclidean bounds' precisions are shrunk (grown) by this share, so rounding in the
# eigenvalues never makes a lower (upper) bound cross the exact cost.
BOUND_SLACK = 1e-9


def precision(family: int, cov: FloatArray) -> tuple[FloatArray, float, float, float] | None:
    """The family's lower-triangular precision factor P (|P u|^2 = u^T S_family^-1 u),
    (1/2) ln det S_family, a lower bound of S_family^-1's smallest eigenvalue (1 / the
    largest variance direction) and an upper bound of its largest (of P^T P's, P as computed:
    the largest eigenvalue is the well-conditioned end); None when singular."""
    d = cov.shape[0]
    if family == FULL:
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return None
        diag = np.diag(chol)
        if not np.all(diag > 0):
            return None
        factor = np.tril(np.linalg.solve(chol, np.eye(d)))
        largest = float(np.linalg.eigvalsh(cov)[-1])
        top = float(np.linalg.eigvalsh(factor.T @ factor)[-1])
        return (
            factor,
            float(np.log(diag).sum()),
            (1 - BOUND_SLACK) / largest,
            (1 + BOUND_SLACK) * top,
        )
    variances = np.diag(cov).copy() if family == DIAGONAL else np.full(d, np.trace(cov) / d)
    if not np.all(variances > 0) or not np.all(np.isfinite(variances)):
        return None
    roots = 1.0 / np.sqrt(variances)
    return (
        np.diag(roots),
        0.5 * float(np.log(variances).sum()),
        (1 - BOUND_SLACK) / float(variances.max()),
        (1 + BOUND_SLACK) * float((roots * roots).max()),
    )


def freeze(
    weights: FloatArray,
    means: FloatArray,
    cov: FloatArray,
    alive: BoolArray,
    label_counts: FloatArray,
    sizes: FloatArray,
    family: int,
    beta: float,
) -> Frozen:
    """Parameters for the next pass from a partition's weights, moments and labels.

    A labeled item of category z joining cluster c pays beta (s_c / L_c) (-ln q_c(z)): the
    cluster's label term p_c h_c of eq. (10) spread over its labeled members, with the shares
    q_c frozen (a category the cluster has none of counts as if it had one). A cluster without
    labels charges nothing: the first labeled member leaves its h at 0.
    """
    k, d = means.shape
    live = alive.copy()
    const = np.full(k, np.inf)
    factor = np.zeros((k, d, d))
    min_precision = np.zeros(k)
    max_precision = np.zeros(k)
    for c in np.flatnonzero(live):
        found = precision(family, cov[c]) if weights[c] > 0 else None
        if found is None:
            live[c] = False
            continue
        factor[c], half_logdet, min_precision[c], max_precision[c] = found
        const[c] = -math.log(weights[c]) + 0.5 * d * LOG_2PI + half_logdet
    labeled = label_counts.sum(axis=1)
    label_cost = np.zeros(label_counts.shape)
    if beta != 0.0:
        for c in np.flatnonzero(labeled > 0):
            shares = np.maximum(label_counts[c], 1.0) / (labeled[c] + 1.0)
            label_cost[c] = beta * (sizes[c] / labeled[c]) * -np.log(shares)
    return Frozen(
        live, const, np.ascontiguousarray(means), factor, label_cost, min_precision, max_precision
    )


def polish_state(
    totals: Totals, alive: BoolArray, family: int, beta: float, n_total: float
) -> ClusterState:
    """The global statistics as the sequential engine's ``ClusterState`` (sizes in the whole
    data's weight), for Hartigan moves inside one chunk (``chunk_kernels.polish_chunk``)."""
    k, d = totals.s1.shape
    state = new_state(k, d, totals.label_counts.shape[1])
    mean, cov = totals.moments()
    state.size[:] = np.where(alive, totals.count, 0.0)
    state.mean[:] = mean
    state.cov[:] = cov
    state.alive[:] = alive & (totals.count > 0)
    state.label_counts[:] = np.rint(totals.label_counts).astype(np.int64)
    state.labeled[:] = state.label_counts.sum(axis=1)
    for c in range(k):
        state.label_xlogx[c] = sum(xlogx(float(v)) for v in state.label_counts[c])
        if state.alive[c]:
            state.entropy[c] = family_entropy(
                family, state.cov[c], state.chol[c], state.chol_inv[c]
            )
        refresh_energy(state, c, n_total, beta)
    return state
