from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from app.api.schemas.common import DatasetPartRead, Index, Page, RequestBody

ViewMethod = Literal["features", "pca", "umap"]
FeatureRef = Annotated[str, Field(max_length=1000)] | Index


class ViewCreate(RequestBody):
    method: ViewMethod = "features"
    x: FeatureRef | None = Field(default=None, description="Feature name or index (features)")
    y: FeatureRef | None = Field(default=None, description="Feature name or index (features)")


class ViewRead(DatasetPartRead):
    name: str
    method: ViewMethod
    params: dict[str, Any]
    created_at: datetime


class ViewsPage(Page):
    items: list[ViewRead]
    total: int
    limit: int
    offset: int
