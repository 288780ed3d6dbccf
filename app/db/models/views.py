"""2-D views of a dataset for scatterplots. Coordinates live in the array store under the kind
`view-<id>` (float32, n_items x 2), like every other large array."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, PartOfDataset, UTCDateTime, utcnow


class View(PartOfDataset, Base):
    __tablename__ = "views"

    name: Mapped[str] = mapped_column(String(200))
    method: Mapped[str] = mapped_column(String(16))  # pca | features | umap
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def chunk_kind(self) -> str:
        return f"view-{self.id}"
