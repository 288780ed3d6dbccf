from typing import Literal

from pydantic import BaseModel, Field


class RegionRead(BaseModel):
    anchor: tuple[int, int] = Field(
        description="(x, y): a pixel of the item near its centre (x = column, y = row); a "
        "stroke on it with radius `answer_radius` covers exactly this item"
    )
    answer_radius: float
    radius: float = Field(description="The radius of a disc with the item's area, pixels")
    bbox: tuple[int, int, int, int] = Field(description="(x0, y0, x1, y1), inclusive pixels")


class SuggestionRead(BaseModel):
    kind: Literal["pair", "item"] = Field(
        description="pair: are these two items the same thing? item: which label has it?"
    )
    items: list[int] = Field(description="Row positions: two for a pair, one for an item")
    clusters: list[int] = Field(description="The two clusters of the run the question is about")
    score: float = Field(description="Higher is more useful; comparable within one response")
    reason: str
    regions: list[RegionRead] | None = Field(
        None,
        description="Images: where each item is, in the order of `items`; null for tables",
    )


class SuggestionsRead(BaseModel):
    run_id: int = Field(description="The finished run the questions reason from")
    run_revision: int = Field(description="Annotation revision the run was fitted on")
    revision: int = Field(description="Annotation revision the questions take into account")
    stale: bool = Field(description="The run predates the latest annotations")
    items: list[SuggestionRead]
