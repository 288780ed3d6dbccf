"""The functions Dask runs for PPC's data-parallel EM: a chunk's E-step, a relation group's,
and the fitted labels and marginals of a chunk.

Pure functions of their inputs (the group's sampler is seeded per pass), so a task retried on
another worker returns the same answer. A chunk's rows are independent given the mixture (the
related ones are solved in their group), so its E-step is the mixture posterior, conditioned
on the component of a labeled row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.chunk_scan import floats_of, rows_of
from app.engine.core.families import DIAGONAL, FULL
from app.engine.ppc.chunked.mixture_kernels import (
    SKIP,
    log_constants,
    mixture_pass,
    precision_bounds,
)
from app.engine.ppc.chunked.mixture_stats import MixtureStats
from app.engine.ppc.chunked.relation_groups import RelationGroup
from app.engine.ppc.fit import Options, Params, _Chain, infer, m_step_weights
from app.engine.ppc.mstep import log_gaussian


@dataclass(frozen=True)
class MixtureRule:
    """The mixture a pass freezes, with what the pruned E-step kernel needs of it."""

    weights: FloatArray
    means: FloatArray
    prec_chol: FloatArray
    family: int
    unlabeled_weight: float  # the M-step weight of an unlabeled row (EM-lambda); 1: plain EM
    const: FloatArray = field(init=False)
    lam: FloatArray = field(init=False)
    lam_max: FloatArray = field(init=False)

    @classmethod
    def of(cls, params: Params, opts: Options) -> MixtureRule:
        return cls(
            params.weights, params.means, params.prec_chol, opts.family, opts.unlabeled_weight
        )

    def __post_init__(self) -> None:
        d = self.means.shape[1]
        object.__setattr__(
            self, "const", log_constants(self.weights, self.prec_chol, self.family, d)
        )
        lam, lam_max = precision_bounds(self.prec_chol, self.family, d)
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "lam_max", lam_max)

    def log_scores(self, X: FloatArray) -> FloatArray:
        return log_gaussian(X, self.means, self.prec_chol, self.family) + np.log(self.weights)

    def kernel_pass(
        self, X: NDArray[np.floating[Any]], labels: IntArray, stats: MixtureStats
    ) -> tuple[IntArray, float, int]:
        """``mixture_pass`` over rows ``X``: their modes, log partition and labeled agreement;
        the statistics are added to ``stats``."""
        m, d = self.means.shape
        full = self.family == FULL
        if full:
            pfull, pdiag = np.ascontiguousarray(self.prec_chol), np.empty((m, 0))
        elif self.family == DIAGONAL:
            pfull, pdiag = np.empty((m, 0, 0)), np.ascontiguousarray(self.prec_chol)
        else:
            pfull, pdiag = np.empty((m, 0, 0)), np.repeat(self.prec_chol[:, np.newaxis], d, 1)
        s2full = stats.s2 if full else np.empty((m, 0, 0))
        s2diag = np.empty((m, 0)) if full else stats.s2
        mode = np.empty(X.shape[0], dtype=np.int64)
        log_z, agree = mixture_pass(
            X, labels, self.const, self.means, pfull, pdiag, self.lam, self.lam_max, stats.shift,
            self.unlabeled_weight, stats.count, stats.s1, s2full, s2diag, mode,
        )  # fmt: skip
        if full:  # the kernel fills the lower triangles
            lower = np.tril(stats.s2)
            stats.s2 = lower + np.transpose(np.tril(lower, -1), (0, 2, 1))
        stats.log_z += log_z
        return mode, log_z, agree


@dataclass
class ChunkEStep:
    stats: MixtureStats
    agree: int  # labeled rows whose plain mixture label is their own


@dataclass
class GroupEStep:
    stats: MixtureStats
    chain: _Chain  # the mean-field marginals / Gibbs state, carried to the next pass
    resp: FloatArray | None  # the final pass only
    labels: IntArray | None


def _labels(y_block: Any, n: int) -> IntArray:
    if y_block is None:
        return np.full(n, -1, dtype=np.int64)
    return np.asarray(y_block).astype(np.int64)  # always a copy: the caller may write it


def _posterior(a: FloatArray, labels: IntArray) -> tuple[FloatArray, FloatArray]:
    """Row-wise softmax and log-sum-exp of ``a``, with labeled rows conditioned on their label."""
    labeled = np.flatnonzero(labels >= 0)
    if labeled.shape[0]:
        keep = a[labeled, labels[labeled]]
        a[labeled] = -np.inf
        a[labeled, labels[labeled]] = keep
    top = a.max(axis=1, keepdims=True)
    e = np.exp(a - top)
    s = e.sum(axis=1, keepdims=True)
    return e / s, (top + np.log(s))[:, 0]


def chunk_estep(block: Any, y_block: Any, exclude: IntArray, rule: MixtureRule) -> ChunkEStep:
    """The E-step of a chunk's unrelated rows and their statistics for the M-step."""
    X = floats_of(block)  # a float32 chunk as it is: the kernel reads it as doubles
    labels = _labels(y_block, X.shape[0])  # a copy
    labels[exclude] = SKIP  # their groups' E-steps place the related rows
    stats = MixtureStats.zeros(rule.means, rule.family)
    _, _, agree = rule.kernel_pass(X, labels, stats)
    return ChunkEStep(stats, agree)


def group_estep(
    X: FloatArray,
    group: RelationGroup,
    rule: MixtureRule,
    opts: Options,
    chain: _Chain,
    seed: int,
    scale: float,
    final: bool,
) -> GroupEStep:
    """PPC's own E-step on a relation group (rows ``X``); ``final``: refine the labels by ICM
    and return them with the marginals."""
    own = _Chain(
        None if chain.Q is None else chain.Q.copy(), None if chain.z is None else chain.z.copy()
    )  # tasks on threads of one worker may share the input
    est = infer(
        rule.log_scores(X), group.graph, opts, own, np.random.RandomState(seed), scale, final
    )
    weights = m_step_weights(X.shape[0], group.graph, opts)
    resp = est.resp if weights is None else est.resp * weights[:, np.newaxis]
    stats = MixtureStats.of_rows(X, resp, rule.means, rule.family, est.bound)
    return GroupEStep(stats, own, est.resp if final else None, est.labels if final else None)


def chunk_labels(
    block: Any, y_block: Any, fixed_at: IntArray, fixed: IntArray, rule: MixtureRule
) -> IntArray:
    """A chunk's fitted labels: the conditioned posterior's mode, the related rows' (``fixed_at``)
    from their group's E-step (``fixed``)."""
    X = floats_of(block)
    out, _, _ = rule.kernel_pass(
        X, _labels(y_block, X.shape[0]), MixtureStats.zeros(rule.means, rule.family)
    )
    out[fixed_at] = fixed
    return out


def chunk_marginals(
    block: Any, y_block: Any, fixed_at: IntArray, fixed: FloatArray, rule: MixtureRule
) -> FloatArray:
    """A chunk's posterior marginals P_p(z_i = k | X, Theta, W), the related rows' from their
    group."""
    X = rows_of(block)
    resp, _ = _posterior(rule.log_scores(X), _labels(y_block, X.shape[0]))
    resp[fixed_at] = fixed
    return resp


def chunk_proba(block: Any, rule: MixtureRule) -> FloatArray:
    """The plain mixture posterior P_s(k | x, Theta) of a chunk's rows (``predict_proba``)."""
    resp, _ = _posterior(rule.log_scores(rows_of(block)), np.empty(0, dtype=np.int64))
    return resp
