"""Featurize an image dataset in the background: its pixels (or superpixels) become items.

A featurization job is named by a key stored in `dataset.featurization["job"]` when it is
queued; every write the worker makes checks that key, so a job superseded by a newer request
(or whose dataset was deleted) stops at its next progress report and writes nothing.
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Dataset
from app.db.session import session_scope
from app.engine.image.featurize import Featurization, Recipe, featurize
from app.engine.image.image_file import decode
from app.jobs.featurize.collection_images import take_collection_image
from app.jobs.featurize.slide_featurizer import featurize_stored_slide, store_slide_arrays
from app.store import chunks
from app.store.dataset_arrays import (
    FEATURES,
    GROUND_TRUTH,
    IMAGE,
    ITEM_OF_PIXEL,
    REDUCTION,
    load_pixel_ground_truth,
)
from app.store.sources.tables import SourceError
from app.store.views import delete_views, pca_coordinates, store_view

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.5


class Superseded(Exception):
    """The job's dataset was deleted or featurized again by a newer request."""


class InputRefused(Exception):
    """The job's input is at fault (a table read in place holds a NaN, a duplicate id, ...):
    its message, said as it is, is the dataset's error."""


# Reads a table imported by reference for its derived arrays (the services' upload sink does
# it; the executor is handed it, so this package needs nothing above it): given the session,
# the dataset, the rows per chunk and a progress callback, it writes the arrays (records
# deferred) and returns the dataset's columns to set. Raises InputRefused for the user's faults.
TableReader = Callable[[Session, Dataset, int, Callable[[float], None]], dict[str, Any]]


class Interrupted(Exception):
    """The server is stopping: the job stops at its next progress report, writes nothing, and
    is taken up again at the next start (its dataset stays `featurizing`)."""


def queue_featurization(
    dataset: Dataset,
    recipe: dict[str, Any],
    requested_by: int | None = None,
    batch: str | None = None,
    source: dict[str, Any] | None = None,
) -> None:
    """Mark a dataset for (re)featurization with `recipe`; the caller commits and submits.
    `requested_by` (a user id) is whose background work it is: limits and fair turns. The
    featurizations of one `batch` (a collection's images) count as one job toward the limit."""
    previous = dataset.featurization or {}
    dataset.status = "featurizing"
    dataset.featurization = {
        "recipe": recipe,
        "job": uuid.uuid4().hex,
        "progress": 0.0,
        "version": int(previous.get("version", 0)),
        "requested_by": requested_by,
        **({"batch": batch} if batch else {}),
        # A collection's image not yet taken from its file (`collection_images.py`) waits.
        **({"source": source or previous["source"]} if source or "source" in previous else {}),
    }


def queue_source_read(dataset: Dataset, requested_by: int | None) -> None:
    """Mark a table imported by reference to be read in the background (the caller commits
    and submits it as a featurization: same statuses, progress, turns and recovery)."""
    dataset.status = "featurizing"
    dataset.featurization = {
        "recipe": {},
        "reads_source": True,
        "job": uuid.uuid4().hex,
        "progress": 0.0,
        "version": 0,
        "requested_by": requested_by,
    }


class _Owned:
    """The dataset row a job may write, with its featurization record (never None here)."""

    def __init__(self, dataset: Dataset, record: dict[str, Any]) -> None:
        self.dataset = dataset
        self.record = record


def _owned(session: Session, dataset_id: int, job: str) -> _Owned:
    dataset = session.get(Dataset, dataset_id, with_for_update=True)
    record = dataset.featurization if dataset is not None else None
    if dataset is None or not record or record.get("job") != job:
        raise Superseded
    return _Owned(dataset, record)


def item_ground_truth(
    item_of_pixel: NDArray[np.int32], truth: NDArray[np.int32], n_items: int, n_classes: int
) -> NDArray[np.int32]:
    """Each item's most frequent known class (-1 when none of its pixels has one)."""
    known = truth >= 0
    counts = np.bincount(
        item_of_pixel[known].astype(np.int64) * n_classes + truth[known],
        minlength=n_items * n_classes,
    ).reshape(n_items, n_classes)
    labels = counts.argmax(axis=1).astype(np.int32)
    labels[counts.sum(axis=1) == 0] = -1
    return labels


def _progress(
    factory: sessionmaker[Session], dataset_id: int, job: str, stopping: threading.Event
) -> Callable[[float], None]:
    """Reports the job's progress on its dataset at most every PROGRESS_INTERVAL_S; raises
    Superseded once the job is no longer the dataset's, Interrupted once ``stopping`` is set."""
    last = [0.0]

    def progress(fraction: float) -> None:
        if stopping.is_set():
            raise Interrupted
        now = time.monotonic()
        if now - last[0] < PROGRESS_INTERVAL_S and fraction < 1.0:
            return
        last[0] = now
        with session_scope(factory) as session:
            owned = _owned(session, dataset_id, job)
            owned.dataset.featurization = {**owned.record, "progress": round(fraction, 3)}

    return progress


def execute_featurization(
    factory: sessionmaker[Session],
    dataset_id: int,
    chunk_rows: int,
    stopping: threading.Event | None = None,
    read_table: TableReader | None = None,
) -> None:
    """Featurize the dataset (or read a table imported by reference, with ``read_table``);
    ``stopping`` (set when the server stops) interrupts it at its next progress report,
    leaving it to be taken up again at the next start."""
    stopping = stopping or threading.Event()
    with session_scope(factory) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None or dataset.status != "featurizing" or not dataset.featurization:
            return
        job = str(dataset.featurization["job"])
        reads_source = bool(dataset.featurization.get("reads_source"))
    try:
        if reads_source:
            progress = _progress(factory, dataset_id, job, stopping)
            _read_source(factory, dataset_id, job, chunk_rows, progress, read_table)
            return
        # A collection's image may still be in the file it was uploaded in.
        if not take_collection_image(factory, dataset_id, chunk_rows, stopping):
            raise Interrupted
        with session_scope(factory) as session:
            dataset = session.get(Dataset, dataset_id)
            record = dataset.featurization if dataset is not None else None
            if dataset is None or not record or record.get("job") != job:
                raise Superseded
            if dataset.status != "featurizing":  # its image could not be taken: it says why
                return
            recipe_dict = dict(record["recipe"])
            slide = bool(dataset.meta.get("image", {}).get("tiled"))
            data = (
                None
                if slide
                else chunks.read_blob(session=session, dataset_id=dataset_id, kind=IMAGE)
            )
            pixel_truth = load_pixel_ground_truth(session=session, dataset=dataset)
            n_classes = len(dataset.ground_truth_classes or [])
        if slide:
            progress = _progress(factory, dataset_id, job, stopping)
            _featurize_slide(
                factory, dataset_id, job, Recipe.from_dict(recipe_dict), chunk_rows, progress
            )
            return
        assert data is not None, "the dataset has no stored image"
        started = time.perf_counter()
        progress = _progress(factory, dataset_id, job, stopping)
        result = featurize(decode(data), Recipe.from_dict(recipe_dict), progress)
        seconds = time.perf_counter() - started
        truth = None
        if pixel_truth is not None and n_classes:
            truth = item_ground_truth(result.item_of_pixel, pixel_truth, result.n_items, n_classes)
        with session_scope(factory) as session:
            _store(session, _owned(session, dataset_id, job), result, truth, chunk_rows, seconds)
    except Superseded:
        log.info("featurization of dataset %s was superseded or deleted", dataset_id)
    except Interrupted:
        log.info(
            "featurization of dataset %s stopped with the server; it resumes at start", dataset_id
        )
    except Exception as exc:  # a readable reason on the dataset, never a silent stop
        if stopping.is_set():  # the server going away under it is no fault of the image
            log.info("featurization of dataset %s cut short by the shutdown (%s)", dataset_id, exc)
            return
        try:
            with session_scope(factory) as session:
                owned = _owned(session, dataset_id, job)
                if isinstance(exc, InputRefused | SourceError):  # the user's, said to the user
                    log.info("dataset %s refused: %s", dataset_id, exc)
                    reason = str(exc)
                else:
                    log.exception("featurization of dataset %s failed", dataset_id)
                    reason = f"{type(exc).__name__}: {exc}"
                if owned.record.get("sync"):  # the dataset stays as it was before the sync
                    owned.dataset.status = "ready"
                    owned.dataset.featurization = _sync_ended(owned.record, reason)
                else:
                    owned.dataset.status = "failed"
                    owned.dataset.featurization = {**owned.record, "error": reason}
        except Superseded:  # deleted meanwhile: its arrays went while they were being read
            log.info("featurization of dataset %s was superseded or deleted", dataset_id)


def _read_source(
    factory: sessionmaker[Session],
    dataset_id: int,
    job: str,
    chunk_rows: int,
    progress: Callable[[float], None],
    read_table: TableReader | None,
) -> None:
    """A table imported by reference, read once for its derived arrays, then made ready."""
    if read_table is None:
        raise RuntimeError("this executor was given no reader of tables imported by reference")
    with session_scope(factory) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise Superseded
        started = time.perf_counter()
        fields = read_table(session, dataset, chunk_rows, progress)
        owned = _owned(session, dataset_id, job)
        for name, value in fields.items():
            setattr(owned.dataset, name, value)
        owned.dataset.status = "ready"
        synced = owned.record.get("sync")
        owned.dataset.featurization = {
            **(_sync_ended(owned.record) if synced else owned.record),
            "progress": 1.0,
            "n_items": owned.dataset.n_items,
            "seconds": round(time.perf_counter() - started, 2),
            "version": int(owned.record.get("version", 0)) + 1,
        }


def _sync_ended(record: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    """The featurization record once a sync's read ended (`services/source_sync.py`): the one
    before the sync, with what the sync did (or why it failed, nothing done) as `last_sync`."""
    pending = record["sync"]
    outcome = {**pending["report"], "at": datetime.now(UTC).isoformat(timespec="seconds")}
    if error is not None:
        outcome = {**outcome, "error": error, "views_removed": 0, "rows_read": 0}
    return {**pending["previous"], "job": record["job"], "last_sync": outcome}


def _featurize_slide(
    factory: sessionmaker[Session],
    dataset_id: int,
    job: str,
    recipe: Recipe,
    chunk_rows: int,
    progress: Callable[[float], None],
) -> None:
    """A slide, from the store (`slide_featurizer.py`): one session that only reads while the
    blocks run, then records and replaces everything in one write."""
    with session_scope(factory) as session:
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise Superseded
        started = time.perf_counter()
        with chunks.deferred_records(session):
            result = featurize_stored_slide(session, dataset, recipe, progress)
        seconds = time.perf_counter() - started
        owned = _owned(session, dataset_id, job)
        store_slide_arrays(session, owned.dataset, result, chunk_rows)
        stored = Featurization(
            features=result.features,
            item_of_pixel=np.empty((0, 0), dtype=np.int32),  # stored tiled already
            shape=(owned.dataset.meta["image"]["height"], owned.dataset.meta["image"]["width"]),
            superpixels=True,
            fitted=result.fitted,
            raw_feature_names=result.raw_feature_names,
        )
        _store(session, owned, stored, None, chunk_rows, seconds, item_map_stored=True)


def _store(
    session: Session,
    owned: _Owned,
    result: Featurization,
    truth: NDArray[np.int32] | None,
    chunk_rows: int,
    seconds: float,
    item_map_stored: bool = False,
) -> None:
    """Replace the dataset's items in one transaction: features, pixel map (unless
    ``item_map_stored``: a slide's, written as it was made), item ground truth, the fitted
    reduction and the default PCA view."""
    dataset = owned.dataset
    chunks.delete_arrays(
        session=session,
        dataset_id=dataset.id,
        kinds=[FEATURES, GROUND_TRUTH, REDUCTION] + ([] if item_map_stored else [ITEM_OF_PIXEL]),
    )
    delete_views(session=session, dataset_id=dataset.id)
    features = np.ascontiguousarray(result.features, dtype=np.float32)
    arrays: dict[str, NDArray[np.generic]] = {FEATURES: features}
    if not item_map_stored:
        arrays[ITEM_OF_PIXEL] = result.item_of_pixel.ravel()
    if truth is not None:
        arrays[GROUND_TRUTH] = truth
    for kind, array in arrays.items():
        chunks.write_array(
            session=session, dataset_id=dataset.id, kind=kind, array=array, chunk_rows=chunk_rows
        )
    chunks.write_blob(
        session=session, dataset_id=dataset.id, kind=REDUCTION, data=result.fitted.to_npz()
    )
    dataset.n_items = result.n_items
    dataset.n_features = int(features.shape[1])
    dataset.feature_names = [f"pc{k + 1}" for k in range(features.shape[1])]
    dataset.dtype = "float32"
    dataset.status = "ready"
    dataset.featurization = {
        **owned.record,
        "progress": 1.0,
        "shape": [int(n) for n in result.shape],
        "superpixels": bool(result.superpixels),
        "n_items": result.n_items,
        "seconds": round(seconds, 2),
        "version": int(owned.record.get("version", 0)) + 1,
    }
    store_view(
        session=session,
        dataset=dataset,
        name="PCA",
        method="pca",
        params={},
        coords=pca_coordinates(features),
        chunk_rows=chunk_rows,
    )


def pending_featurizations(factory: sessionmaker[Session]) -> list[int]:
    """Datasets queued for featurization, or left mid-way by a stopped server."""
    with session_scope(factory) as session:
        return list(
            session.scalars(
                select(Dataset.id).where(Dataset.status == "featurizing").order_by(Dataset.id)
            )
        )
