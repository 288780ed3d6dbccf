"""Clustering engine: pure numerics (numpy, scipy, numba), no web and no SQL.

`core` holds what the methods share (the CEC cost and Gaussian families, moments, the Hartigan
kernels, seeding, validation, metrics); each method is a subpackage with its estimator at its
face (`cec` with CEC-IB, `c4s`, `c3l`, `ppc`, `smic`); `image` turns pixels into items."""

from app.engine.c3l import C3L
from app.engine.c4s import C4S
from app.engine.cec import BETA0, CEC, CECIB, critical_beta
from app.engine.core.cost import cec_ib_energy
from app.engine.core.metrics import (
    ConstraintSatisfaction,
    adjusted_rand_index,
    label_constraint_satisfaction,
    normalized_mutual_info,
    pairwise_constraint_satisfaction,
)
from app.engine.image import grid_links, grid_neighbour_pairs, neighbour_disagreement
from app.engine.ppc import PPC, confidence_to_weight
from app.engine.smic import SMIC

__all__ = [
    "BETA0",
    "C3L",
    "C4S",
    "CEC",
    "CECIB",
    "PPC",
    "SMIC",
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
