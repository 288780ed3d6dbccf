"""A Gaussian mixture's sufficient statistics, summed over chunks, and the M-step from them.

PPC's data-parallel EM: every chunk returns, per component, the soft count, the weighted sum
and the weighted scatter of its rows (full matrices, or diagonals for the diagonal and
spherical families) about a shift, the frozen means of the pass, so that clusters far from the
origin keep their digits; the driver adds them in chunk order and re-estimates the mixture
with the same formulas as ``ppc.mstep.gaussian_m_step`` (scikit-learn's: soft counts plus
10 eps, ``reg_covar`` on the diagonals). Only k x d x d numbers per chunk cross the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.engine.arrays import FloatArray
from app.engine.core.families import DIAGONAL, FULL
from app.engine.ppc.mstep import _scatter


@dataclass
class MixtureStats:
    shift: FloatArray  # (M, d) the pass's frozen means
    count: FloatArray  # (M,) sum_i r_ik
    s1: FloatArray  # (M, d) sum_i r_ik x_i
    s2: FloatArray  # (M, d, d) or (M, d): sum_i r_ik (x_i - shift_k)(x_i - shift_k)^T
    log_z: float  # the E-step's log partition (or its surrogate), summed over the rows

    @classmethod
    def zeros(cls, shift: FloatArray, family: int) -> MixtureStats:
        m, d = shift.shape
        s2 = np.zeros((m, d, d)) if family == FULL else np.zeros((m, d))
        return cls(shift, np.zeros(m), np.zeros((m, d)), s2, 0.0)

    @classmethod
    def of_rows(
        cls, X: FloatArray, resp: FloatArray, shift: FloatArray, family: int, log_z: float
    ) -> MixtureStats:
        """The statistics of rows ``X`` with (weighted) responsibilities ``resp``."""
        out = cls.zeros(shift, family)
        out.count = resp.sum(axis=0)
        out.s1 = resp.T @ X
        if family == FULL:
            _scatter(X, resp, shift, out.s2)
        else:
            for k in range(shift.shape[0]):
                centred = X - shift[k]
                out.s2[k] = resp[:, k] @ (centred * centred)
        out.log_z = log_z
        return out

    def add(self, other: MixtureStats) -> None:
        self.count += other.count
        self.s1 += other.s1
        self.s2 += other.s2
        self.log_z += other.log_z

    def m_step(self, family: int, reg_covar: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Soft counts n_k (plus 10 eps), means and covariances (+ reg_covar), as
        ``gaussian_m_step`` on the rows these statistics sum."""
        nk = self.count + 10.0 * np.finfo(np.float64).eps
        means = self.s1 / nk[:, np.newaxis]
        # The scatter about the rows' own mean: about the shift, less the shift's offset.
        own = np.divide(
            self.s1,
            self.count[:, np.newaxis],
            out=self.shift.copy(),
            where=self.count[:, np.newaxis] > 0,
        )
        offset = own - self.shift
        if family == FULL:
            scatter = self.s2 - self.count[:, np.newaxis, np.newaxis] * (
                offset[:, :, np.newaxis] * offset[:, np.newaxis, :]
            )
            covariances = scatter / nk[:, np.newaxis, np.newaxis]
            d = means.shape[1]
            for k in range(means.shape[0]):
                covariances[k].flat[:: d + 1] += reg_covar
            return nk, means, covariances
        variances = (self.s2 - self.count[:, np.newaxis] * offset**2) / nk[:, np.newaxis]
        variances += reg_covar
        if family == DIAGONAL:
            return nk, means, variances
        return nk, means, variances.mean(axis=1)
