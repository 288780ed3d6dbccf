from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import FiniteFloat, Id, Index, Name

ItemList = Annotated[list[Index], Field(min_length=1, max_length=5_000_000)]
Label = Annotated[Name, Field(min_length=1, max_length=100)]
Confidence = Annotated[
    FiniteFloat | None,
    Field(gt=0.5, le=1.0, description="How sure the expert is, in (0.5, 1]; 1 (default) is hard."),
]


class LabelCreate(BaseModel):
    kind: Literal["label"]
    items: ItemList = Field(description="Item indices (row positions) to label")
    label: Label


class MustLinkCreate(BaseModel):
    kind: Literal["must_link"]
    items: ItemList = Field(description="Items that all belong together (at least 2)")
    confidence: Confidence = None


class CannotLinkCreate(BaseModel):
    kind: Literal["cannot_link"]
    items_a: ItemList
    items_b: ItemList
    confidence: Confidence = None


class BoundaryCreate(BaseModel):
    kind: Literal["boundary"]
    view_id: Id
    points: list[tuple[FiniteFloat, FiniteFloat]] = Field(
        min_length=2,
        max_length=10_000,
        description="A polyline in the view's coordinates; repeat the first point to close a "
        "polygon",
    )
    labels: tuple[Label, Label] = Field(
        description="Category names: [left of the line / inside, right / outside]"
    )


AnnotationCreate = Annotated[
    LabelCreate | MustLinkCreate | CannotLinkCreate | BoundaryCreate,
    Field(discriminator="kind"),
]


class AnnotationRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    dataset_id: int
    kind: str
    payload: dict[str, Any]
    confidence: float | None
    revision: int
    author_id: int | None
    created_at: datetime
    deleted_at: datetime | None


class AnnotationsPage(BaseModel):
    items: list[AnnotationRead]
    total: int
    limit: int
    offset: int
    revision: int
    can_undo: bool
    can_redo: bool


class UndoRedoRead(BaseModel):
    annotation: AnnotationRead
    revision: int


class ConflictRead(BaseModel):
    kind: str
    needs: list[str] = Field(
        description="Side information involved; algorithms using all of it refuse to run"
    )
    message: str
    annotation_ids: list[int]
    items: list[int]


class SideInformationRead(BaseModel):
    dataset_id: int
    revision: int
    n_items: int
    n_labeled: int
    label_names: list[str]
    labeled_items: dict[str, list[int]] = Field(description="Items per label name")
    chunklets: list[list[int]] = Field(description="Must-link closures of 2 or more items")
    must_link: list[tuple[int, int]]
    must_link_confidence: list[float]
    cannot_link: list[tuple[int, int]]
    cannot_link_confidence: list[float]
    side_scores: list[float] | None = Field(
        description="Signed score per item from the boundary in force (>= 0: first label)"
    )
    boundary_labels: list[str] | None
    boundary_annotation_id: int | None
    conflicts: list[ConflictRead]
    notes: list[str]
