"""One row per expert act on a dataset. Undo is a soft delete; redo clears `deleted_at`.

`revision` is the dataset revision the act created. `deleted_revision` is the revision its undo
created while it can still be redone; a new annotation empties the redo stack by clearing it
(the row stays deleted). Runs store the side information they compiled, so history is exact.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, PartOfDataset, UTCDateTime, utcnow
from app.db.packed_items import PayloadWithPackedItems


class Annotation(PartOfDataset, Base):
    __tablename__ = "annotations"

    kind: Mapped[str] = mapped_column(String(32))
    # Long item lists packed (`packed_items.py`): read back as the lists written.
    payload: Mapped[dict[str, Any]] = mapped_column(PayloadWithPackedItems)
    confidence: Mapped[float | None] = mapped_column(Float)
    revision: Mapped[int] = mapped_column(Integer)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    deleted_revision: Mapped[int | None] = mapped_column(Integer)
