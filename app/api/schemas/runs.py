from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue, computed_field, field_validator

from app.api.schemas.common import DatasetPartRead, Id, Page, RequestBody
from app.jobs import engine_state
from app.jobs.algorithms import ALGORITHMS

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
"""As stored in `runs.status` (`services.runs.ACTIVE` + `TERMINAL`)."""


_ALGORITHM_IDS: list[JsonValue] = [*sorted(ALGORITHMS)]


class RunCreate(RequestBody):
    dataset_id: Id
    algorithm: str = Field(
        max_length=100,
        description="An id from GET /api/v1/algorithms, e.g. cec-ib",
        json_schema_extra={"enum": _ALGORITHM_IDS},
    )
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("algorithm")
    @classmethod
    def _known(cls, value: str) -> str:
        # The published enum, enforced (the registry is the one place algorithms are listed).
        if value not in ALGORITHMS:
            raise ValueError(
                f"unknown algorithm {value!r}; available: {', '.join(sorted(ALGORITHMS))}"
            )
        return value


class RunRead(DatasetPartRead):
    algorithm: str
    params: dict[str, Any]
    annotation_revision: int
    status: RunStatus
    progress_iteration: int | None
    progress_cost: float | None
    cancel_requested: bool
    error: str | None
    engine_version: str
    source_run_id: int | None = Field(
        None, description="Set when this run applies that run's fitted model to this image"
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @computed_field(  # type: ignore[prop-decorator]
        description="While running: 'preparing' until the first sweep when this server has "
        "not fitted the method yet (its numba kernels may be compiling: the first run after "
        "an install waits for them), else 'fitting'; null when not running"
    )
    @property
    def stage(self) -> Literal["preparing", "fitting"] | None:
        if self.status != "running":
            return None
        if self.progress_iteration is None and not engine_state.is_ready(self.algorithm):
            return "preparing"
        return "fitting"


class RunsPage(Page):
    items: list[RunRead]
    total: int
    limit: int
    offset: int


class RunResultRead(BaseModel):
    run_id: int
    n_items: int
    n_clusters: int
    labels: list[int] | None = Field(
        description="Cluster of every item in row order; null when asked without (`labels=false`)"
    )
    cluster_labels: list[str | None] = Field(
        description="Per cluster id, the label most of its labeled items (or scribbled pixels) "
        "carry, or null: reads a cluster mask as a label mask"
    )
    metrics: dict[str, Any]
    cluster_params: dict[str, Any]
    cost_history: list[float | None]


class RunApply(RequestBody):
    dataset_id: Id = Field(description="The image to segment with the run's fitted model")


class AlgorithmRead(BaseModel):
    id: str
    name: str
    summary: str
    uses: list[str] = Field(description="Side information the algorithm uses")
    side_information_mapping: str
    parameters: dict[str, Any] = Field(description="JSON Schema of the run parameters")


class AlgorithmsPage(Page):
    items: list[AlgorithmRead]
    total: int
    limit: int
    offset: int
