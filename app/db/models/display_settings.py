"""Each user's display of a dataset's measured channels (which are shown, in what colour, over
what range of values): a view, not data, so kept per user and changed by viewers too."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow


class DisplaySetting(Base):
    __tablename__ = "display_settings"

    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    # [{"visible": bool, "colour": "rrggbb", "low": float, "high": float}] one per channel
    channels: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
