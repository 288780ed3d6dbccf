"""Clustering engine: pure numerics (numpy, scipy, numba), no web and no SQL."""

from app.engine.cec import CEC
from app.engine.cec_cost import cec_ib_energy
from app.engine.cec_ib import CECIB
from app.engine.ib_theory import BETA0, critical_beta
from app.engine.metrics import (
    ConstraintSatisfaction,
    adjusted_rand_index,
    label_constraint_satisfaction,
    normalized_mutual_info,
    pairwise_constraint_satisfaction,
)

__all__ = [
    "BETA0",
    "CEC",
    "CECIB",
    "ConstraintSatisfaction",
    "adjusted_rand_index",
    "cec_ib_energy",
    "critical_beta",
    "label_constraint_satisfaction",
    "normalized_mutual_info",
    "pairwise_constraint_satisfaction",
]
