"""2-D views of a dataset for scatterplots. Coordinates live in `dataset_chunks` under the kind
`view-<id>` (float32, n_items x 2), like every other large array."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import NEVER_REUSE_IDS, Base, UTCDateTime, utcnow


class View(Base):
    __tablename__ = "views"
    __table_args__ = NEVER_REUSE_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    method: Mapped[str] = mapped_column(String(16))  # pca | features | umap
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def chunk_kind(self) -> str:
        return f"view-{self.id}"
