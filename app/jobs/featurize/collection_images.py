"""A collection's images taken from the files they were uploaded in, in the background.

A collection upload is answered once its files are checked from their headers and kept as
staged files (`app/store/staged_files.py`): a 1,000-plane stack would otherwise keep its user
waiting while every plane is decoded and stored. Each image's featurization record names the
file and the image's place in it (``source``); the first featurization to start on a file
takes every image of it that waits (one pass, one image decoded at a time, each stored in a
short transaction of its own, so nobody waits on the pass), and the file is released once no
image waits for it. A server stopped mid-pass leaves the rest to the next start, whose
featurizations take it up again."""

import logging
import threading
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Dataset
from app.db.session import session_scope
from app.engine.image.image_file import ImageFileError, stack_contents
from app.engine.image.parsed_image import ParsedImage, file_images, is_single
from app.store import chunks, staged_files
from app.store.dataset_arrays import DISPLAY_IMAGE, IMAGE

log = logging.getLogger(__name__)

# How often a pass looks again at which images still wait: a deleted collection's file is not
# decoded to its end for nothing.
LOOK_AGAIN_S = 1.0

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def waiting_source(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The staged file and place a featurization must first take its image from, if any."""
    source = (record or {}).get("source")
    return source if isinstance(source, dict) else None


def take_collection_image(
    factory: sessionmaker[Session], dataset_id: int, chunk_rows: int, stopping: threading.Event
) -> bool:
    """Make sure the dataset's image is stored, taking it (and every image waiting on the same
    file) from its staged file if it is not; False when ``stopping`` cut the pass short."""
    with session_scope(factory) as session:
        dataset = session.get(Dataset, dataset_id)
        source = waiting_source(dataset.featurization if dataset else None)
    if source is None:
        return True
    file_id = str(source["file"])
    with _lock(file_id):  # one pass over a file at a time (in this process)
        with session_scope(factory) as session:
            waiting = _waiting(session, file_id)
            if dataset_id not in waiting.values():  # a pass before this one took it
                return True
            data = staged_files.read(session, file_id)
        if data is None:
            _fail(factory, file_id, "the file it was uploaded in is no longer kept")
            return True
        done = _take_all(factory, file_id, data, waiting, stopping)
        with session_scope(factory) as session:
            released = done and not _waiting(session, file_id)
            if released:
                staged_files.release(session, file_id)
    if released:  # no pass will look at this file again: its lock goes too
        with _locks_guard:
            _locks.pop(file_id, None)
    return done


def release_unneeded_files(session: Session) -> int:
    """Release the staged files no image waits for (every image taken or deleted); how many.
    At start-up, and after a pass."""
    needed = {source["file"] for source in _sources(session).values()}
    unneeded = [name for name in staged_files.staged_names(session) if name not in needed]
    for file_id in unneeded:
        staged_files.release(session, file_id)
    return len(unneeded)


def _take_all(
    factory: sessionmaker[Session],
    file_id: str,
    data: bytes,
    waiting: dict[int, int],
    stopping: threading.Event,
) -> bool:
    looked = time.monotonic()
    try:
        images = file_images(data, is_single(stack_contents(data)))
        for index, (_, image) in enumerate(images):
            if stopping.is_set():
                return False
            if time.monotonic() - looked > LOOK_AGAIN_S:  # the images may have been deleted
                with session_scope(factory) as session:
                    waiting = _waiting(session, file_id)
                looked = time.monotonic()
                if not waiting:
                    break
            if index in waiting:
                _store(factory, waiting[index], file_id, index, image)
    except ImageFileError as exc:  # the headers were checked at upload; the pixels were not
        _fail(factory, file_id, f"its pixels cannot be read: {exc}")
    return True


def _store(
    factory: sessionmaker[Session], dataset_id: int, file_id: str, index: int, image: ParsedImage
) -> None:
    """One image's arrays and description, in a short transaction; nothing if its dataset was
    deleted or featurized again meanwhile."""
    with session_scope(factory) as session:
        dataset = session.get(Dataset, dataset_id, with_for_update=True)
        record = dataset.featurization if dataset is not None else None
        if dataset is None or waiting_source(record) != {"file": file_id, "image": index}:
            return
        assert record is not None
        chunks.write_blob(session=session, dataset_id=dataset_id, kind=IMAGE, data=image.data)
        if image.display is not None:
            chunks.write_blob(
                session=session, dataset_id=dataset_id, kind=DISPLAY_IMAGE, data=image.display
            )
        # No Deep Zoom pyramid: most planes of a large stack are never opened in the viewer,
        # which builds one on first view.
        dataset.meta = {**dataset.meta, "image": image.meta()}
        dataset.featurization = {k: v for k, v in record.items() if k != "source"}


def _fail(factory: sessionmaker[Session], file_id: str, why: str) -> None:
    """Every image still waiting on the file fails, saying why; the file is released."""
    with session_scope(factory) as session:
        for dataset_id in _waiting(session, file_id).values():
            dataset = session.get(Dataset, dataset_id, with_for_update=True)
            if dataset is None or dataset.featurization is None:
                continue
            log.warning("dataset %s: its image could not be taken: %s", dataset_id, why)
            dataset.status = "failed"
            dataset.featurization = {
                **{k: v for k, v in dataset.featurization.items() if k != "source"},
                "error": f"{dataset.source_filename!r}: {why}",
            }
        staged_files.release(session, file_id)


def _waiting(session: Session, file_id: str) -> dict[int, int]:
    """The images still to be taken from the file: their place in it -> dataset id."""
    return {
        int(source["image"]): dataset_id
        for dataset_id, source in _sources(session).items()
        if source["file"] == file_id
    }


def _sources(session: Session) -> dict[int, dict[str, Any]]:
    """Dataset id -> the source its featurization waits for. Few datasets are featurizing at
    any moment (a collection's images at most a thousand); the source is in the job's JSON."""
    records = session.execute(
        select(Dataset.id, Dataset.featurization).where(Dataset.status == "featurizing")
    )
    found = {dataset_id: waiting_source(record) for dataset_id, record in records}
    return {dataset_id: source for dataset_id, source in found.items() if source is not None}


def _lock(file_id: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(file_id, threading.Lock())
