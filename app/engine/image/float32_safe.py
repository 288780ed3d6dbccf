"""Measured values mapped to 0..1 in float32 without overflow, whatever their range."""

import math

import numpy as np
from numpy.typing import NDArray

# Channels whose values reach beyond this are scaled by a power of two before they are mapped to
# 0..1 in float32: float32 ends at 3.4e38, and a range like -1e308..1e308 (float64) or
# -3e38..3e38 (float32) made its span infinite, every scaled value NaN and the featurization's
# PCA fail ("Eigenvalues did not converge").
FLOAT32_SAFE = 1e30


def within_float32(
    values: NDArray[np.generic], low: float, high: float
) -> tuple[NDArray[np.generic], float, float]:
    """``values`` and their range as they are, or, for values beyond ``FLOAT32_SAFE``, all
    three multiplied by the same power of two (exact: only the exponent changes), so that
    ``(values - low) / (high - low)`` is finite in float32 and means the same."""
    reach = max(abs(low), abs(high))
    if reach <= FLOAT32_SAFE:
        return values, low, high
    factor = 2.0 ** -(math.frexp(reach)[1])  # reach * factor in [0.5, 1)
    return np.asarray(values, dtype=np.float64) * factor, low * factor, high * factor
