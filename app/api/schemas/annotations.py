from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from app.api.schemas.common import (
    DatasetPartRead,
    FiniteFloat,
    Groups,
    Id,
    Index,
    Name,
    Page,
    RequestBody,
    given_group,
    one_of_groups,
)
from app.services.annotations import MAX_BATCH, batch_size_problem, scribble_problem

ItemList = Annotated[list[Index], Field(min_length=1, max_length=5_000_000)]
ItemId = Annotated[str, Field(max_length=1000)]
ItemIdList = Annotated[list[ItemId], Field(min_length=1, max_length=5_000_000)]
Label = Annotated[Name, Field(min_length=1, max_length=100)]
# Views hold float32 coordinates and images are far smaller: a point beyond float32's range is
# in no view (and would overflow the geometry of side scores).
COORDINATE_MAX = 3.4028234663852886e38
Coordinate = Annotated[FiniteFloat, Field(ge=-COORDINATE_MAX, le=COORDINATE_MAX)]
Point = Annotated[tuple[Coordinate, Coordinate], Strict(False)]  # [x, y]
Confidence = Annotated[
    FiniteFloat | None,
    Field(gt=0.5, le=1.0, description="How sure the expert is, in (0.5, 1]; 1 (default) is hard."),
]


class Stroke(RequestBody):
    """A brush stroke on an image, in pixel coordinates (x = column, y = row, origin at the
    centre of the top-left pixel): it covers every pixel whose centre is within `radius` of the
    polyline through `points` (one point: a disc)."""

    points: list[Point] = Field(min_length=1, max_length=100_000)
    radius: FiniteFloat = Field(gt=0, le=10_000)


StrokeList = Annotated[list[Stroke], Field(min_length=1, max_length=10_000)]


ITEM_IDS_DESCRIPTION = (
    "The same items named by the dataset's id column (`id_column`; without one, the row "
    "numbers as text), instead of row positions"
)


class LabelCreate(RequestBody):
    """Items to label, named by row position (`items`) or by id (`item_ids`)."""

    _GROUPS: ClassVar[Groups] = (("items",), ("item_ids",))
    model_config = ConfigDict(json_schema_extra=one_of_groups(*_GROUPS))

    kind: Literal["label"]
    items: ItemList | SkipJsonSchema[None] = Field(
        None, description="Item indices (row positions) to label"
    )
    item_ids: ItemIdList | SkipJsonSchema[None] = Field(None, description=ITEM_IDS_DESCRIPTION)
    label: Label

    @model_validator(mode="after")
    def _items_or_ids(self) -> "LabelCreate":
        given_group(self, self._GROUPS, "give either items or item_ids")
        return self


class MustLinkCreate(RequestBody):
    """Items that belong together: named by index (`items`) or id (`item_ids`), or on an image
    the items under `strokes` ("these strokes are the same thing")."""

    _GROUPS: ClassVar[Groups] = (("items",), ("item_ids",), ("strokes",))
    model_config = ConfigDict(json_schema_extra=one_of_groups(*_GROUPS))

    kind: Literal["must_link"]
    items: ItemList | SkipJsonSchema[None] = Field(
        None, description="Items that all belong together (2 or more)"
    )
    item_ids: ItemIdList | SkipJsonSchema[None] = Field(None, description=ITEM_IDS_DESCRIPTION)
    strokes: StrokeList | SkipJsonSchema[None] = Field(
        None, description="Images: strokes over the same thing"
    )
    confidence: Confidence = None

    @model_validator(mode="after")
    def _items_or_strokes(self) -> "MustLinkCreate":
        given_group(self, self._GROUPS, "give either items, item_ids or strokes")
        return self


class CannotLinkCreate(RequestBody):
    """Two sets that are apart: named by index (`items_a`, `items_b`) or id (`item_ids_a`,
    `item_ids_b`), or on an image the items under `strokes_a` and under `strokes_b`
    ("different things")."""

    _GROUPS: ClassVar[Groups] = (
        ("items_a", "items_b"),
        ("item_ids_a", "item_ids_b"),
        ("strokes_a", "strokes_b"),
    )
    model_config = ConfigDict(json_schema_extra=one_of_groups(*_GROUPS))

    kind: Literal["cannot_link"]
    items_a: ItemList | SkipJsonSchema[None] = None
    items_b: ItemList | SkipJsonSchema[None] = None
    item_ids_a: ItemIdList | SkipJsonSchema[None] = Field(None, description=ITEM_IDS_DESCRIPTION)
    item_ids_b: ItemIdList | SkipJsonSchema[None] = Field(None, description=ITEM_IDS_DESCRIPTION)
    strokes_a: StrokeList | SkipJsonSchema[None] = None
    strokes_b: StrokeList | SkipJsonSchema[None] = None
    confidence: Confidence = None

    @model_validator(mode="after")
    def _items_or_strokes(self) -> "CannotLinkCreate":
        given_group(
            self,
            self._GROUPS,
            "give either items_a and items_b, item_ids_a and item_ids_b, or strokes_a and "
            "strokes_b",
        )
        return self


class ScribbleCreate(RequestBody):
    """A scribble on an image: the items under its strokes get `label`; with `"erase": true`
    instead of a label, the items under it lose the labels scribbled or given before."""

    model_config = ConfigDict(json_schema_extra=one_of_groups(("label",), ("erase",)))

    kind: Literal["scribble"]
    strokes: StrokeList
    label: Label | SkipJsonSchema[None] = None
    erase: Literal[True] | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _label_or_erase(self) -> "ScribbleCreate":
        problem = scribble_problem(self.label, self.erase)
        if problem:
            raise ValueError(problem)
        return self


class BoundaryCreate(RequestBody):
    kind: Literal["boundary"]
    view_id: Id
    points: list[Point] = Field(
        min_length=2,
        max_length=10_000,
        description="A polyline in the view's coordinates; repeat the first point to close a "
        "polygon",
    )
    labels: Annotated[tuple[Label, Label], Strict(False)] = Field(
        description="Category names: [left of the line / inside, right / outside]"
    )


AnnotationCreate = Annotated[
    LabelCreate | MustLinkCreate | CannotLinkCreate | BoundaryCreate | ScribbleCreate,
    Field(discriminator="kind"),
]


class AnnotationBatchCreate(RequestBody):
    """Many annotations recorded as one act: all or none are stored, under one revision, and
    one undo takes them all back."""

    annotations: list[AnnotationCreate] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"1 to {MAX_BATCH:,} annotations, each as the single route takes it",
    )

    @field_validator("annotations", mode="before")
    @classmethod
    def _at_most_a_batch(cls, value: object) -> object:
        # Before the annotations themselves are validated: an oversized batch is refused at
        # once, with its size, not after checking each of its annotations.
        problem = batch_size_problem(len(value)) if isinstance(value, list) else None
        if problem:
            raise ValueError(problem)
        return value


class AnnotationBatchRead(BaseModel):
    ids: list[int] = Field(description="The new annotations' ids, in the order sent")
    revision: int = Field(description="The one revision the batch created")
    count: int


AnnotationKind = Literal["label", "must_link", "cannot_link", "boundary", "scribble"]


class AnnotationRead(DatasetPartRead):
    kind: AnnotationKind
    payload: dict[str, Any]
    confidence: float | None
    revision: int
    author_id: int | None
    created_at: datetime
    deleted_at: datetime | None


class AnnotationsPage(Page):
    items: list[AnnotationRead]
    total: int
    limit: int
    offset: int
    revision: int
    can_undo: bool
    can_redo: bool


class AnnotationEdit(RequestBody):
    """What an edit may change; the edit replaces the annotation (undo brings the old back)."""

    label: Label | None = Field(default=None, description="New label (label, scribble)")
    confidence: Confidence = Field(default=None, description="New confidence (links)")


class UndoRedoRead(BaseModel):
    annotation: AnnotationRead = Field(
        description="The annotation undone, redone or deleted (of a batch, its newest)"
    )
    revision: int
    count: int = Field(
        description="How many annotations were undone, redone or deleted: a batch is undone "
        "and redone whole"
    )


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
