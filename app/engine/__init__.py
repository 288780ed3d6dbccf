"""Clustering engine: pure numerics (numpy, scipy, numba), no web and no SQL."""

from app.engine.c3l import C3L
from app.engine.c4s import C4S
from app.engine.cec import CEC
from app.engine.cec_cost import cec_ib_energy
from app.engine.cec_ib import CECIB
from app.engine.grid_links import grid_links, grid_neighbour_pairs, neighbour_disagreement
from app.engine.ib_theory import BETA0, critical_beta
from app.engine.metrics import (
    ConstraintSatisfaction,
    adjusted_rand_index,
    label_constraint_satisfaction,
    normalized_mutual_info,
    pairwise_constraint_satisfaction,
)
from app.engine.ppc import PPC, confidence_to_weight

__all__ = [
    "BETA0",
    "C3L",
    "C4S",
    "CEC",
    "CECIB",
    "PPC",
    "ConstraintSatisfaction",
    "adjusted_rand_index",
    "cec_ib_energy",
    "confidence_to_weight",
    "critical_beta",
    "grid_links",
    "grid_neighbour_pairs",
    "label_constraint_satisfaction",
    "neighbour_disagreement",
    "normalized_mutual_info",
    "pairwise_constraint_satisfaction",
]
