"""Datasets and their binary row chunks (features, item ids, ground truth, image bytes)."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import AddressedById, Base, UTCDateTime, utcnow


class Dataset(AddressedById, Base):
    __tablename__ = "datasets"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))  # table | image
    status: Mapped[str] = mapped_column(String(32))  # ready | awaiting_featurization
    n_items: Mapped[int] = mapped_column(Integer)
    n_features: Mapped[int] = mapped_column(Integer)
    feature_names: Mapped[list[str]] = mapped_column(JSON, default=list)
    dtype: Mapped[str] = mapped_column(String(16), default="float64")
    id_column: Mapped[str | None] = mapped_column(String(200))
    ground_truth_column: Mapped[str | None] = mapped_column(String(200))
    ground_truth_classes: Mapped[list[str] | None] = mapped_column(JSON)
    source_filename: Mapped[str] = mapped_column(String(255), default="")
    # Image size, ignored text columns, per-feature statistics: read-mostly facts about the data.
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    featurization: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Bumped by every annotation act; runs record the revision they used.
    revision: Mapped[int] = mapped_column(Integer, default=0)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetChunk(Base):
    """`n_rows` consecutive rows of one array of a dataset, as raw little-endian bytes.

    `kind` names the array: `features` (float32/float64, n_items x n_features), `item_ids`
    (UTF-8, newline separated), `ground_truth` (int32 class codes), `image` (the original file).
    """

    __tablename__ = "dataset_chunks"
    __table_args__ = (UniqueConstraint("dataset_id", "kind", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(32))
    index: Mapped[int] = mapped_column(Integer)
    start_row: Mapped[int] = mapped_column(Integer)
    n_rows: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
