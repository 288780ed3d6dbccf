"""Datasets: what they are (their arrays live in the array store, see stored_arrays.py)."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Integer,
    String,
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

    @property
    def label_column(self) -> str | None:
        """The table's column of expert labels, which became its label annotations when it was
        made ready (kept in `meta`)."""
        name = (self.meta or {}).get("label_column")
        return str(name) if name else None
