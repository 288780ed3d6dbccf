from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    computed_field,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from app.api.schemas.common import (
    DatasetPartRead,
    Groups,
    Id,
    Page,
    Pixel,
    Pixels,
    RequestBody,
    given_group,
    one_of_groups,
)
from app.jobs.algorithms import ALGORITHMS
from app.jobs.execute import waiting
from app.jobs.warmup import engine_state

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
"""As stored in `runs.status` (`services.runs.ACTIVE` + `TERMINAL`)."""


_ALGORITHM_IDS: list[JsonValue] = [*sorted(ALGORITHMS)]


class Region(RequestBody):
    """A rectangle of a slide in level-0 pixels: columns x .. x + width - 1, rows y .. y +
    height - 1."""

    x: Pixel
    y: Pixel
    width: Pixels = Field(description="Pixels; a region has an area")
    height: Pixels


class RunCreate(RequestBody):
    dataset_id: Id
    algorithm: str = Field(
        max_length=100,
        description="An id from GET /api/v1/algorithms, e.g. cec-ib",
        json_schema_extra={"enum": _ALGORITHM_IDS},
    )
    params: dict[str, Any] = Field(default_factory=dict)
    region: Region | None = Field(
        None,
        description="On a slide only: segment this region (level-0 pixels) instead of the "
        "whole slide. The model is fitted on the scribbled items and a fixed sample of the "
        "others (with the region's own), and applied to the items the region touches: "
        "seconds on a slide of millions of items. Its result's tiles and PNG cover the "
        "region; its labels are -1 for every item outside it.",
    )

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
    attempt: int | None = Field(
        None,
        description="How many times a worker started this run (2 or more: a worker running it "
        "died and another took it over from the start); null until it starts",
    )
    engine_version: str
    source_run_id: int | None = Field(
        None, description="Set when this run applies that run's fitted model to this image"
    )
    region: Region | None = Field(
        None, description="The region of the slide this run segments; null: all of it"
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

    @computed_field(  # type: ignore[prop-decorator]
        description="While queued: what stops it from starting, when something does (no Dask "
        "scheduler answering, a scheduler with no worker, no worker able to run the app's "
        "tasks); null when it only waits its turn, and once it started"
    )
    @property
    def waiting_for(self) -> str | None:
        return waiting.reason() if self.status == "queued" else None


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


MAX_APPLY_BATCH = 1000
BatchIds = Annotated[
    list[Id],
    Field(min_length=1, max_length=MAX_APPLY_BATCH, json_schema_extra={"uniqueItems": True}),
]


class RunApply(RequestBody):
    """One image (`dataset_id`: answered with its run) or several (`dataset_ids`: a batch,
    answered with one run per image, in the order given)."""

    _GROUPS: ClassVar[Groups] = (("dataset_id",), ("dataset_ids",))
    model_config = ConfigDict(json_schema_extra=one_of_groups(*_GROUPS))

    dataset_id: Id | SkipJsonSchema[None] = Field(
        default=None,
        description="The image to segment with the run's fitted model",
    )
    dataset_ids: BatchIds | SkipJsonSchema[None] = Field(
        default=None,
        description="Several images (a collection) to segment, one run each",
    )

    @model_validator(mode="after")
    def _one_way(self) -> "RunApply":
        given_group(self, self._GROUPS, "give either dataset_id (one image) or dataset_ids")
        if self.dataset_ids is not None and len(set(self.dataset_ids)) != len(self.dataset_ids):
            raise ValueError("dataset_ids repeats an image")
        return self


class RunBatch(BaseModel):
    """The runs a batch apply queued, one per image, in the order the images were given."""

    items: list[RunRead]


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


class WrittenLabelsRead(BaseModel):
    name: str = Field(description="The label image's name under the source's labels/")
    url: str = Field(description="Where it was written")
    levels: int = Field(description="Resolution levels written (each half the last)")
    n_labels: int = Field(description="Label values 1..n_labels are clusters 0..n_labels-1")
