"""Where each array of a dataset or run lives in the array store, and what it holds.

The bytes are in the store (`app/store/array_store.py`); this row is what makes them part of
the database's world: written in the same transaction as the dataset or run, so an upload that
never commits leaves only an unreferenced directory, which start-up sweeps away."""

from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow


class StoredArray(Base):
    __tablename__ = "stored_arrays"

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int | None] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), index=True
    )
    # What the array is to its owner: features, item_ids, ground_truth, image, view-<id>, ...
    kind: Mapped[str] = mapped_column(String(64))
    # Relative to the store's root: <datasets|runs>/<owner id>-<token>/<kind>.<token>
    key: Mapped[str] = mapped_column(String(255), unique=True)
    shape: Mapped[list[int]] = mapped_column(JSON)
    dtype: Mapped[str] = mapped_column(String(16))  # numpy's name; "utf8" for strings
    chunk_rows: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64))  # BLAKE2b-128 of the raw bytes
    nbytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def prefix(self) -> str:
        """The owner's directory in the store."""
        return self.key.rsplit("/", 1)[0]
