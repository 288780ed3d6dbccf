"""Clustering runs (a row first, then work) and their stored results."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, PartOfDataset, UTCDateTime, utcnow


class Run(PartOfDataset, Base):
    __tablename__ = "runs"

    algorithm: Mapped[str] = mapped_column(String(32))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    annotation_revision: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    progress_iteration: Mapped[int | None] = mapped_column(Integer)
    progress_cost: Mapped[float | None] = mapped_column(Float)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # Set when a worker claims the run; every later write by that worker must match it, so a
    # worker can only ever write to the run it was started for.
    worker_key: Mapped[str | None] = mapped_column(String(32))
    # How many times a worker started the run: a Dask task is started again on another worker
    # when its worker dies (killed, or restarted by its nanny for memory). None until claimed.
    attempt: Mapped[int | None] = mapped_column(Integer)
    # The Dask worker that runs (or last ran) it; None in-process.
    worker_address: Mapped[str | None] = mapped_column(String(255))
    error: Mapped[str | None] = mapped_column(Text)
    # Set when this run applies another run's fitted model to this dataset (an image session
    # segmenting more images); it then fits nothing itself.
    source_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    # A run on a slide that covers only this region ({"x", "y", "width", "height"}, level-0
    # pixels): fitted on the scribbled items and a sample, its labels given only to the items
    # the region touches (the others -1). None: the whole dataset.
    region: Mapped[dict[str, int] | None] = mapped_column(JSON)
    # The side information compiled when the run was created, so later annotation edits never
    # change what a run sees: the hash of its blob in the array store, shared by runs on the
    # same annotations (app/store/run_side_information.py); None when there was no annotation.
    side_information_hash: Mapped[str | None] = mapped_column(String(32))
    # Runs created before the blobs were shared kept theirs here (NPZ); new runs leave it None.
    side_information: Mapped[bytes | None] = mapped_column(LargeBinary)
    engine_version: Mapped[str] = mapped_column(String(32), default="")
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RunResult(Base):
    __tablename__ = "run_results"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    # The labels (int32, one per item) are in the array store (app/store/run_arrays.py).
    # The fitted estimator (pickled by the runner itself, never uploaded), for `apply`.
    model: Mapped[bytes | None] = mapped_column(LargeBinary)
    # Image datasets: the full-resolution cluster mask as a PNG index image.
    mask: Mapped[bytes | None] = mapped_column(LargeBinary)
    cluster_params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    cost_history: Mapped[list[float]] = mapped_column(JSON, default=list)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
