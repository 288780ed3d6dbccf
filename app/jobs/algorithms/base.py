"""What every registered algorithm provides."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from app.sideinfo import SideInformation

Progress = Callable[[int, float], bool]
FloatArray = NDArray[np.floating]

# Side-information kinds an algorithm may use.
LABELS = "labels"
MUST_LINK = "must_link"
CANNOT_LINK = "cannot_link"
BOUNDARY = "boundary"


class Params(BaseModel):
    """Base of every parameter model: unknown parameters are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class FitPlan:
    """An estimator ready to fit, and the keyword arguments that carry the side information."""

    estimator: Any
    fit_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Algorithm:
    id: str
    name: str
    summary: str
    uses: tuple[str, ...]
    side_information_mapping: str  # how annotations become the engine's inputs, in words
    params_model: type[Params]
    # plan(params, side information, features, progress): the estimator and its fit inputs.
    plan: Callable[[Any, SideInformation, FloatArray, Progress], FitPlan]
    # What the side information must contain for this algorithm, as a message when it does not.
    requirement: Callable[[SideInformation], str | None] | None = None

    def parameters_schema(self) -> dict[str, Any]:
        return self.params_model.model_json_schema()

    def relevant_conflicts(self, info: SideInformation) -> list[dict[str, Any]]:
        used = set(self.uses)
        return [c.as_dict() for c in info.conflicts if set(c.needs) <= used]


def hard_pairs(pairs: NDArray[np.int64], confidence: NDArray[np.float64]) -> NDArray[np.int64]:
    return pairs[confidence >= 1.0]
