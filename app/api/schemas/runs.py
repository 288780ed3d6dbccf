from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import Id


class RunCreate(BaseModel):
    dataset_id: Id
    algorithm: str = Field(
        max_length=100, description="An id from GET /api/v1/algorithms, e.g. cec-ib"
    )
    params: dict[str, Any] = Field(default_factory=dict)


class RunRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    dataset_id: int
    algorithm: str
    params: dict[str, Any]
    annotation_revision: int
    status: str
    progress_iteration: int | None
    progress_cost: float | None
    cancel_requested: bool
    error: str | None
    engine_version: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunsPage(BaseModel):
    items: list[RunRead]
    total: int
    limit: int
    offset: int


class RunResultRead(BaseModel):
    run_id: int
    n_items: int
    n_clusters: int
    labels: list[int]
    metrics: dict[str, Any]
    cluster_params: dict[str, Any]
    cost_history: list[float | None]


class AlgorithmRead(BaseModel):
    id: str
    name: str
    summary: str
    uses: list[str] = Field(description="Side information the algorithm uses")
    side_information_mapping: str
    parameters: dict[str, Any] = Field(description="JSON Schema of the run parameters")


class AlgorithmsPage(BaseModel):
    items: list[AlgorithmRead]
    total: int
    limit: int
    offset: int
