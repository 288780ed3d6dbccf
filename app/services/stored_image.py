"""A picture's stored file (or the PNG a browser is shown of it) decoded: never a slide's, which
is read by region."""

from sqlalchemy.orm import Session

from app.db.models import Dataset
from app.engine.image.image_file import ImageFileError, Pixels, decode
from app.services.errors import InvalidInput, NotFound
from app.store import chunks


def decoded(session: Session, dataset: Dataset, *kinds: str) -> Pixels:
    """The first of the blobs ``kinds`` the dataset has, decoded."""
    for kind in kinds:
        data = chunks.read_blob(session=session, dataset_id=dataset.id, kind=kind)
        if data is not None:
            break
    else:
        raise NotFound(f"dataset {dataset.id}'s image is missing from the array store")
    try:
        return decode(data)
    except ImageFileError as exc:  # stored at upload after a full decode: not expected
        raise InvalidInput(f"dataset {dataset.id}'s image cannot be read: {exc}") from None
