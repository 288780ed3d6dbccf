"""C3L: CEC with a classifier's side scores, constrained by the leakage of each cluster."""

from app.engine.c3l.estimator import C3L

__all__ = ["C3L"]
