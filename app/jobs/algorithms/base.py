"""What every registered algorithm provides."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from app.engine.progress import Progress
from app.jobs.results.fitted import FittedEstimator
from app.sideinfo import SideInformation
from app.sideinfo.groups import distinct_groups

FloatArray = NDArray[np.floating]

# Side-information kinds an algorithm may use.
LABELS = "labels"
MUST_LINK = "must_link"
CANNOT_LINK = "cannot_link"
BOUNDARY = "boundary"


# NumPy's and scikit-learn's RandomState take seeds in 0..2**32 - 1.
SEED_MAX = 2**32 - 1
Seed = Annotated[
    Annotated[int, Field(ge=0, le=SEED_MAX)] | None,
    Field(description=f"Seed, 0 to {SEED_MAX}; empty for a random one"),
]


class Params(BaseModel):
    """Base of every parameter model: unknown parameters are errors, not silently ignored, and
    NaN or infinite numbers are refused (Python's JSON parser reads `NaN` and `Infinity`).

    The JSON Schema of a subclass is what the API publishes, so it bounds every field to what
    the estimator accepts; what depends on the data is in `data_problems`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        """What a dataset of this shape refuses of these parameters, as "field: why" lines;
        checked when a run is requested, so that the run does not fail on it later."""
        return []


def at_most_items(field_name: str, value: int | None, n_items: int) -> list[str]:
    if value is None or value <= n_items:
        return []
    return [f"{field_name}: {value} is more than the {n_items} items of the dataset"]


@dataclass(frozen=True)
class ItemStructure:
    """Links that the data's own layout implies between items: neighbouring pixels, or
    superpixels that share a border (weights in (0, 1], scaled by an algorithm's parameter)."""

    pairs: NDArray[np.int64]
    weights: NDArray[np.float64]


@dataclass
class FitPlan:
    """An estimator ready to fit, and the keyword arguments that carry the side information."""

    estimator: FittedEstimator
    fit_kwargs: dict[str, Any] = field(default_factory=dict)
    # What the run's result should tell the user about how the plan was made (a guessed
    # parameter): shown with the estimator's own warnings.
    notes: tuple[str, ...] = ()


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
    # Whether `plan` also takes `structure=` (an ItemStructure or None) for images.
    uses_structure: bool = False
    # Whether `plan` also takes `previous=` (jobs/continuation.py: the mixture of the latest
    # finished run of this algorithm, or None) and continues it when its params ask to.
    continues: bool = False
    # Whether applying its model to another image pools the clusters' covariances (CEC
    # family; app/engine/image/pooled_apply.py says why).
    pools_covariance_on_apply: bool = False

    def parameters_schema(self) -> dict[str, Any]:
        return self.params_model.model_json_schema()

    def relevant_conflicts(self, info: SideInformation) -> list[dict[str, Any]]:
        used = set(self.uses)
        return [c.as_dict() for c in info.conflicts if set(c.needs) <= used]


def link_kwargs(must: NDArray[np.integer], cannot: NDArray[np.integer]) -> dict[str, Any]:
    """`must_link` / `cannot_link` fit arguments, for the kinds that have pairs."""
    kwargs: dict[str, Any] = {}
    if len(must):
        kwargs["must_link"] = must.astype(np.int64)
    if len(cannot):
        kwargs["cannot_link"] = cannot.astype(np.int64)
    return kwargs


def hard_links(info: SideInformation) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The must-links and cannot-links given with full confidence (methods whose constraints
    always hold ignore the soft ones)."""
    return (
        info.must_link[info.must_link_confidence >= 1.0],
        info.cannot_link[info.cannot_link_confidence >= 1.0],
    )


# The cluster count PPC and SMIC fit when it is left empty and the expert has told no two
# groups apart (`clusters_for`); the result then says it was a guess (`guessed_count`).
GUESSED_CLUSTERS = 3

AUTO_CLUSTERS = (
    "empty (the default): one per group you told apart (label categories, or must-linked sets "
    "kept apart by cannot-links) when there are 2 or more"
)


def clusters_for(value: int | None, info: SideInformation, otherwise: int) -> int:
    """A cluster count left empty: one cluster per group the expert told apart (label
    categories, scribbles on an image, or must-linked sets that cannot-links keep pairwise
    apart) when there are two or more, else `otherwise`."""
    if value is not None:
        return value
    groups = distinct_groups(info)
    return groups if groups >= 2 else otherwise


def guessed_count(name: str, value: int | None, info: SideInformation) -> tuple[str, ...]:
    """The note for a result whose cluster count `clusters_for` had to guess: left empty, and
    fewer than two groups told apart, so GUESSED_CLUSTERS were fitted whatever the data hold."""
    if value is not None or distinct_groups(info) >= 2:
        return ()
    return (
        f"{name} was left empty and no two groups are told apart yet, so {GUESSED_CLUSTERS} were "
        f"fitted, a guess: set {name}, or label items of each group (paint them, on an "
        "image; or keep must-linked sets apart with cannot-links) and run again",
    )
