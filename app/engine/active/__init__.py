"""Active questions: which pair or item the expert should answer next, from a fitted partition."""

from app.engine.active.posteriors import ClusterPosteriors, cluster_posteriors
from app.engine.active.questions import (
    Knowledge,
    Question,
    knowledge,
    suggest_items,
    suggest_pairs,
)

__all__ = [
    "ClusterPosteriors",
    "Knowledge",
    "Question",
    "cluster_posteriors",
    "knowledge",
    "suggest_items",
    "suggest_pairs",
]
