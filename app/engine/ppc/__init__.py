"""PPC: penalized probabilistic clustering, a Gaussian mixture with weighted pairwise relations."""

from app.engine.ppc.estimator import PPC, confidence_to_weight

__all__ = ["PPC", "confidence_to_weight"]
