"""C4s: CEC with chunklets (must-link groups) and cannot-links, by a global constrained search."""

from app.engine.c4s.estimator import C4S

__all__ = ["C4S"]
