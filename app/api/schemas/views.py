from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ViewCreate(BaseModel):
    method: Literal["features", "pca", "umap"] = "features"
    x: str | int | None = Field(default=None, description="Feature name or index (features)")
    y: str | int | None = Field(default=None, description="Feature name or index (features)")


class ViewRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    dataset_id: int
    name: str
    method: str
    params: dict[str, Any]
    created_at: datetime


class ViewsPage(BaseModel):
    items: list[ViewRead]
    total: int
    limit: int
    offset: int
