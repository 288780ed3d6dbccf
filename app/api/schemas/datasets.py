from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class DatasetRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    project_id: int
    name: str
    kind: str
    status: str
    n_items: int
    n_features: int
    feature_names: list[str]
    dtype: str
    id_column: str | None
    ground_truth_column: str | None
    ground_truth_classes: list[str] | None
    source_filename: str
    revision: int
    meta: dict[str, Any]
    created_at: datetime


class DatasetsPage(BaseModel):
    items: list[DatasetRead]
    total: int
    limit: int
    offset: int


class ItemRead(BaseModel):
    index: int
    id: str
    values: list[float]
    ground_truth: str | None


class ItemsPage(BaseModel):
    items: list[ItemRead]
    total: int
    limit: int
    offset: int
