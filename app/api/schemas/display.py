from pydantic import BaseModel, Field

from app.api.schemas.common import RequestBody

Colour = Field(pattern=r"^[0-9A-Fa-f]{6}$", description="RRGGBB, added to the picture")


class ChannelDisplayIn(RequestBody):
    visible: bool = True
    colour: str = Colour
    low: float = Field(description="The value shown black (and everything below it)")
    high: float = Field(description="The value shown in full colour (and everything above it)")


class ChannelDisplayRead(BaseModel):
    name: str
    visible: bool
    colour: str = Colour
    low: float
    high: float


class ChannelRange(BaseModel):
    name: str
    minimum: float = Field(description="The channel's least value in the image")
    maximum: float = Field(description="The channel's greatest value in the image")
    low: float = Field(description="Its 0.5th percentile: the automatic range's low end")
    high: float = Field(description="Its 99.5th percentile: the automatic range's high end")


class DisplayRead(BaseModel):
    dataset_id: int
    saved: bool = Field(description="Whether you saved this display (else it is the default)")
    channels: list[ChannelDisplayRead] = Field(description="Your display, one per channel")
    defaults: list[ChannelDisplayRead] = Field(description="The default display")
    ranges: list[ChannelRange]
    tile_query: str = Field(
        description="The `display` query that draws image tiles "
        "(`image_files/{level}/{tile}?display=...`) with your display"
    )


class DisplayUpdate(RequestBody):
    channels: list[ChannelDisplayIn] = Field(
        min_length=1, max_length=16, description="One per channel, in the image's order"
    )
