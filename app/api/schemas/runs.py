from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.api.schemas.common import DatasetPartRead, Id, Page, RequestBody

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
"""As stored in `runs.status` (`services.runs.ACTIVE` + `TERMINAL`)."""


class RunCreate(RequestBody):
    dataset_id: Id
    algorithm: str = Field(
        max_length=100, description="An id from GET /api/v1/algorithms, e.g. cec-ib"
    )
    params: dict[str, Any] = Field(default_factory=dict)


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


class RunsPage(Page):
    items: list[RunRead]
    total: int
    limit: int
    offset: int


class RunResultRead(BaseModel):
    run_id: int
    n_items: int
    n_clusters: int
    labels: list[int]
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
