"""The algorithm registry: one definition per algorithm gives its parameter schema (for forms
and clients), validates run requests, and maps side information onto the engine's inputs."""

from app.jobs.algorithms.base import Algorithm, FitPlan, Progress
from app.jobs.algorithms.registry import ALGORITHMS, get_algorithm

__all__ = ["ALGORITHMS", "Algorithm", "FitPlan", "Progress", "get_algorithm"]
