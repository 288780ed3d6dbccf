"""When EM with Gibbs E-steps has stopped moving.

A Gibbs E-step estimates the marginals from a finite chain, so the M-step's means and weights
carry Monte Carlo noise, and EM never settles to a point: it wanders around its fixed point by
that noise. No tolerance below the noise is ever met (standardised iris, 200 hard pairs, a tied
mixture: every step moved a mean by 0.001-0.004 data standard deviations for all 200 iterations,
against ``tol`` = 1e-6), so such fits used to run to ``max_iter`` and warn.

The test here tells drift from noise without knowing the noise. Over a window of W iterations,
EM that still converges moves in one direction, so its net change is about W steps; EM that has
reached its noise floor moves at random, so its net change is about one step (the difference
of two noisy states, like each step). The parameters count as stationary once the net change
over the window is at most ``DRIFT_RATIO`` mean steps. Slow but steady convergence (a rate of
0.99 per iteration) has a ratio near W and keeps going.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from app.engine.arrays import FloatArray

DRIFT_WINDOW = 10  # iterations over which drift and noise are compared
DRIFT_RATIO = 3.0  # net change over the window, in mean steps, below which EM only wanders


def parameter_change(
    a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray], scale: float
) -> float:
    """How far EM moved between two (means, weights): the largest change of a mean, in data
    standard deviations (``scale``), or of a weight. EM's stopping rules all use this."""
    means = float(np.abs(b[0] - a[0]).max()) / scale
    return max(means, float(np.abs(b[1] - a[1]).max()))


class DriftMonitor:
    """Feed it the means and weights after every M-step; ``update`` says when they only wander."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.states: deque[tuple[FloatArray, FloatArray]] = deque(maxlen=DRIFT_WINDOW + 1)
        self.steps: deque[float] = deque(maxlen=DRIFT_WINDOW)

    def change(self, a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray]) -> float:
        return parameter_change(a, b, self.scale)

    def update(self, means: FloatArray, weights: FloatArray) -> bool:
        """Record one EM iteration's parameters; True once the last window is only noise."""
        state = (means.copy(), weights.copy())
        if self.states:
            self.steps.append(self.change(self.states[-1], state))
        self.states.append(state)
        if len(self.states) <= DRIFT_WINDOW:
            return False
        net = self.change(self.states[0], self.states[-1])
        return net <= DRIFT_RATIO * float(np.mean(self.steps))
