"""Deep Zoom for a tiled viewer (OpenSeadragon reads it as it is): an image's picture and a
run's cluster mask as a `.dzi` descriptor and PNG tiles, `<level>/<column>_<row>.png`, with
the same permission checks as every other read."""

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from app.api.deps import SessionDep, ViewerAccess
from app.api.file_responses import file_response
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.services import deep_zoom, picture_display

router = APIRouter(tags=["images"], responses=ERROR_RESPONSES)

# A dataset's picture and a run's result never change once written: a browser may keep tiles.
_CACHED = {"Cache-Control": "private, max-age=86400"}
Level = Annotated[int, Path(ge=0, le=40, description="0 (1 x 1 pixel) up to the full image")]
Tile = Annotated[
    str,
    Path(pattern=r"^\d{1,6}_\d{1,6}\.png$", description="`<column>_<row>.png`, from 0"),
]
Colours = Annotated[
    str | None,
    Query(
        max_length=7 * deep_zoom.MAX_COLOURS,
        pattern=r"^([0-9A-Fa-f]{6}(,[0-9A-Fa-f]{6})*)?$",  # the schema says what is taken
        description="cluster c's colour is the c-th of these comma-separated RRGGBB values "
        "(cycled); the workspace's palette when left out",
    ),
]


def _xml(text: str) -> Response:
    return Response(text, media_type="application/xml", headers=_CACHED)


def _png(data: bytes) -> Response:
    return Response(data, media_type="image/png", headers=_CACHED)


@router.get("/datasets/{dataset_id}/image.dzi", **file_response("application/xml"))
def read_image_dzi(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """The image's Deep Zoom descriptor: its size, tile size (254) and overlap (1). Level L
    of the pyramid is the image at 1 / 2^(max level - L), sides rounded up."""
    dataset = access.require_dataset()
    return _xml(deep_zoom.picture_descriptor(session=session, dataset=dataset))


Display = Annotated[
    str | None,
    Query(
        max_length=64 * 16,
        description="measured channels only: how each channel is drawn, comma-separated in "
        "the image's order, `RRGGBB:low:high` (its colour, the values drawn black and full) "
        "or `off`; `GET /datasets/{id}/display` gives yours as `tile_query`. Left out: the "
        "default display",
    ),
]


@router.get("/datasets/{dataset_id}/image_files/{level}/{tile}", **file_response("image/png"))
def read_image_tile(
    dataset_id: Id,
    level: Level,
    tile: Tile,
    session: SessionDep,
    access: ViewerAccess,
    display: Display = None,
) -> Response:
    """One tile of the image as the browser shows it (`GET /datasets/{id}/image`), or drawn
    with the `display` of its channels."""
    dataset = access.require_dataset()
    shown = picture_display.parse_query(dataset, display) if display is not None else None
    return _png(
        deep_zoom.picture_tile(
            session=session, dataset=dataset, level=level, tile=tile, display=shown
        )
    )


@router.get("/runs/{run_id}/result.dzi", **file_response("application/xml"))
def read_result_dzi(run_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """The Deep Zoom descriptor of a finished image run's cluster mask (the image's size)."""
    return _xml(deep_zoom.mask_descriptor(session=session, run=access.require_run()))


@router.get("/runs/{run_id}/result_files/{level}/{tile}", **file_response("image/png"))
def read_result_tile(
    run_id: Id,
    level: Level,
    tile: Tile,
    session: SessionDep,
    access: ViewerAccess,
    colours: Colours = None,
) -> Response:
    """One tile of the run's cluster mask, each cluster in its colour (RGB PNG; the viewer
    sets the overlay's opacity). Levels below the full image keep one pixel of each 2 x 2
    block (a cluster id is not averaged)."""
    palette = colours.split(",") if colours else None
    data = deep_zoom.mask_tile(
        session=session, run=access.require_run(), level=level, tile=tile, colours=palette
    )
    return _png(data)
