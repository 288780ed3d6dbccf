"""Files kept for a background job to read: a collection's uploaded files, from which its
images are taken one at a time after the upload has been answered.

A staged file is named before it is written (`new_name`), so the rows that will need it can
say so as they are inserted. It has a `StoredArray` row of its own (no dataset or run owns it:
a stack's file serves every plane's dataset) and a directory of its own, so it is removed with
that row once no image waits for it, and swept at start-up if its row never committed."""

import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models.stored_arrays import StoredArray
from app.store.chunks import stored_array_row
from app.store.stored import StoredInfo
from app.store.transactions import doom, store_of, written

STAGED_FILE = "staged_file"
DIRECTORY = "staged"


def new_name() -> str:
    """A name for a file about to be staged."""
    return secrets.token_hex(8)


def stage(session: Session, name: str, data: bytes) -> StoredInfo:
    """Write a file's bytes (no SQL: an upload's long part); `record` makes them part of the
    database's world in the transaction that commits the upload."""
    written(session, _directory(name))
    return store_of(session).write_bytes(_key(name), data)


def record(session: Session, info: StoredInfo) -> None:
    """The staged file's row."""
    session.add(stored_array_row(None, None, STAGED_FILE, info))


def read(session: Session, name: str) -> bytes | None:
    """The staged file's bytes, or None once it has been released."""
    row = _row(session, name)
    return None if row is None else store_of(session).read_bytes(row.key)


def release(session: Session, name: str) -> None:
    """Remove the staged file: its row now, its bytes once the transaction commits."""
    row = _row(session, name)
    if row is not None:
        doom(session, row.prefix)
        session.delete(row)
        session.flush()


def staged_names(session: Session) -> list[str]:
    keys = session.scalars(select(StoredArray.key).where(StoredArray.kind == STAGED_FILE))
    return [key.split("/")[1] for key in keys]


def _directory(name: str) -> str:
    return f"{DIRECTORY}/{name}"


def _key(name: str) -> str:
    return f"{_directory(name)}/file"


def _row(session: Session, name: str) -> StoredArray | None:
    return session.scalars(
        select(StoredArray).where(StoredArray.kind == STAGED_FILE, StoredArray.key == _key(name))
    ).first()
