"""Your display of an image's measured channels: which are shown, in what colour, over what
range of values. Kept per user; a viewer of the project may keep one too (it changes what they
see, not the data)."""

from fastapi import APIRouter, status

from app.api.deps import SessionDep, ViewerAccess
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.api.schemas.display import DisplayRead, DisplayUpdate
from app.db.models import Dataset, User
from app.services import picture_display
from app.services.image_rows import check_image_taken

router = APIRouter(
    prefix="/datasets/{dataset_id}/display", tags=["images"], responses=ERROR_RESPONSES
)


@router.get("", response_model=DisplayRead)
def read_display(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> DisplayRead:
    """Your display of the image's channels (the default one until you save yours), the
    default, and each channel's extremes and automatic range (0.5th to 99.5th percentile)."""
    dataset = access.require_dataset()
    return _read(session, dataset, access.user)


@router.put("", response_model=DisplayRead)
def save_display(
    dataset_id: Id, body: DisplayUpdate, session: SessionDep, access: ViewerAccess
) -> DisplayRead:
    """Save your display: one entry per channel, in the image's order. A wrong entry (a range
    that does not go up, a value that is not finite, a colour that is not RRGGBB, the wrong
    number of channels) is refused with the channel's name, and nothing is saved."""
    dataset = access.require_dataset()
    check_image_taken(dataset)
    display = picture_display.parse_channels(
        dataset, [channel.model_dump() for channel in body.channels]
    )
    picture_display.save(session, dataset, access.user, display)
    session.commit()
    return _read(session, dataset, access.user)


@router.delete("", status_code=status.HTTP_204_NO_CONTENT)
def reset_display(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> None:
    """Forget your display: the default one is shown again."""
    dataset = access.require_dataset()
    picture_display.require_measured(dataset)
    picture_display.reset(session, dataset, access.user)
    session.commit()


def _read(session: SessionDep, dataset: Dataset, user: User) -> DisplayRead:
    return DisplayRead(dataset_id=dataset.id, **picture_display.described(session, dataset, user))
