"""A featurization whose dataset is deleted while it works: its arrays go while they are being
read, and the error that follows is the deletion's, not a fault of the image. It is logged as
superseded, never as a failed featurization (an ERROR with a traceback, seen when a collection
was deleted while its images featurized)."""

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Dataset, User
from app.engine.image.image_file import ImageFileError
from app.jobs.featurize import featurizer
from tests.api.test_limits import _featurizing_for


def test_a_featurization_whose_dataset_is_deleted_under_it_is_superseded_not_failed(
    session: Session,
    project_id: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user_id = session.scalars(select(User.id).order_by(User.id)).first()
    assert user_id is not None
    dataset_id = _featurizing_for(session, project_id, user_id, "job-1")
    factory = sessionmaker(bind=session.get_bind())

    def deleted_while_read(_data: bytes) -> None:
        with factory() as other:
            row = other.get(Dataset, dataset_id)
            assert row is not None
            other.delete(row)
            other.commit()
        raise ImageFileError("the file is not a PNG, JPEG or TIFF image")

    said = _Said()
    monkeypatch.setattr(featurizer, "log", said)  # what other tests did to logging is no matter
    monkeypatch.setattr(featurizer.chunks, "read_blob", lambda **_: b"half of a file")
    monkeypatch.setattr(featurizer, "decode", deleted_while_read)
    featurizer.execute_featurization(factory, dataset_id, chunk_rows=1024)
    assert any("superseded or deleted" in line for line in said.infos), said.infos
    assert not said.errors, said.errors
    session.expire_all()
    assert session.get(Dataset, dataset_id) is None


class _Said:
    """The featurizer's log, as said."""

    def __init__(self) -> None:
        self.infos: list[str] = []
        self.errors: list[str] = []

    def info(self, message: str, *args: object) -> None:
        self.infos.append(message % args)

    def exception(self, message: str, *args: object) -> None:
        self.errors.append(message % args)

    error = exception
    warning = info
    debug = info
