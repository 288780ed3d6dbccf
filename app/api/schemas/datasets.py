from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.schemas.common import Page

DatasetKind = Literal["table", "image"]
DatasetStatus = Literal["ready", "featurizing", "failed"]
"""An uploaded table is `ready` at once; an image, or a table imported by reference (read once in
the background), is `featurizing` until `ready` or `failed`."""


class LastSync(BaseModel):
    """What the last sync of a table imported by reference did once its read ended."""

    at: datetime = Field(description="When its read ended")
    new: list[str]
    changed: list[str]
    deleted: list[str]
    n_items_before: int
    n_items: int
    views_removed: int
    rows_read: int
    error: str | None = Field(
        None,
        description="Why the source could not be read again: the dataset was left as it was "
        "before the sync (its source still reads as changed, so runs wait for a sync that "
        "succeeds)",
    )


class FeaturizationRead(BaseModel):
    """An image's featurization: the recipe, progress, and once ready the items it made; or a
    table imported by reference being read (`reads_source`)."""

    recipe: dict[str, Any]
    reads_source: bool = Field(
        False,
        description="A table imported by reference, read once in the background for its "
        "statistics, PCA view, ids and classes (its values stay in the source)",
    )
    progress: float = Field(description="0..1 while `featurizing`")
    shape: list[int] | None = Field(None, description="[height, width] of the image")
    superpixels: bool | None = Field(None, description="Items are SLIC superpixels, not pixels")
    n_items: int | None = None
    seconds: float | None = None
    version: int = Field(0, description="Bumped by every finished featurization")
    error: str | None = Field(None, description="Why it failed (status `failed`)")
    image_pending: bool = Field(
        False,
        description="A collection's image not yet taken from the file it was uploaded in (a "
        "large stack's planes are taken in the background after the upload is answered): "
        "its picture endpoints answer 409 until it is",
    )

    syncing: bool = Field(
        False, description="A table imported by reference being read again after a sync"
    )
    last_sync: LastSync | None = Field(
        None, description="The last sync that read the source again: what it did, or why not"
    )

    @model_validator(mode="before")
    @classmethod
    def _pending(cls, data: Any) -> Any:
        if isinstance(data, dict) and "source" in data:
            data = {**data, "image_pending": True}
        if isinstance(data, dict) and "sync" in data:
            data = {**data, "syncing": True}
        return data


class FeaturizationInfo(BaseModel):
    recipe_schema: dict[str, Any] = Field(description="JSON Schema of the recipe")
    default_recipe: dict[str, Any]


class DatasetRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    project_id: int
    name: str
    kind: DatasetKind
    status: DatasetStatus
    n_items: int
    n_features: int
    feature_names: list[str]
    dtype: str
    id_column: str | None
    ground_truth_column: str | None
    label_column: str | None = Field(
        None,
        description="A table's column of expert labels: its labels became label annotations "
        "(one act) when the dataset was made ready",
    )
    ground_truth_classes: list[str] | None
    source_filename: str
    revision: int
    meta: dict[str, Any]
    featurization: FeaturizationRead | None = Field(
        None, description="Images: status `featurizing` -> `ready` (or `failed`), with progress"
    )
    created_at: datetime


class DatasetsPage(Page):
    items: list[DatasetRead]
    total: int
    limit: int
    offset: int


class ItemRead(BaseModel):
    index: int
    id: str
    values: list[float]
    ground_truth: str | None


class ItemsPage(Page):
    items: list[ItemRead]
    total: int
    limit: int
    offset: int
