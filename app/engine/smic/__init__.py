"""SMIC: spectral clustering with its kernel width chosen by least-squares mutual information."""

from app.engine.smic.estimator import SMIC

__all__ = ["SMIC"]
