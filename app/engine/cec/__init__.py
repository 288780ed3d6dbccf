"""CEC and CEC-IB (cross-entropy clustering with an information-bottleneck label term)."""

from app.engine.cec.cec_ib import CECIB
from app.engine.cec.estimator import CEC
from app.engine.cec.ib_theory import BETA0, critical_beta

__all__ = ["BETA0", "CEC", "CECIB", "critical_beta"]
