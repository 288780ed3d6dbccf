"""Helpers for Alembic revisions that rebuild SQLite tables (batch mode copies a table into a
new one, drops the old one and renames the new one).

Two traps: dropping the old table runs its ON DELETE CASCADE actions when foreign keys are on
(run_results would be emptied with runs), and the new table is made from reflection, which
does not know AUTOINCREMENT, so ids would be reused again (see NEVER_REUSE_IDS)."""

from collections.abc import Iterator
from typing import Any, Protocol

from sqlalchemy import Connection

# Pass as batch_alter_table(..., table_kwargs=KEEP_IDS) for every NEVER_REUSE_IDS table;
# other dialects ignore it.
KEEP_IDS: dict[str, Any] = {"sqlite_autoincrement": True}


def foreign_keys_off(bind: Connection) -> None:
    """Call first in a revision that rebuilds tables: SQLite ignores the pragma once the
    revision's transaction has written (env.py runs one transaction per revision)."""
    if bind.dialect.name != "sqlite":
        return
    bind.exec_driver_sql("PRAGMA foreign_keys=OFF")
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar() != 0:
        raise RuntimeError("foreign keys are still on: a rebuild would cascade deletes")


def check_foreign_keys(bind: Connection) -> None:
    if bind.dialect.name != "sqlite":
        return
    broken = bind.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"foreign keys broken by the rebuild: {broken[:5]}")


class ArrayStoreForMigrations(Protocol):
    """What the revisions that moved arrays out of SQL (0006, 0007) call on the array store.
    The caller passes the store in (`migrate.upgrade_to_head(..., array_store=...)`): app/db
    sits below app/store and never imports it."""

    def new_prefix(self, kind: str, owner_id: int) -> str: ...
    def row_writer(
        self, key: str, *, n_columns: int | None, dtype: Any, chunk_rows: int
    ) -> Any: ...
    def write(self, key: str, array: Any, *, chunk_rows: int) -> Any: ...
    def write_bytes(self, key: str, data: bytes) -> Any: ...
    def write_strings(self, key: str, values: Any, *, chunk_rows: int) -> Any: ...
    def read(self, key: str, start: int = 0, stop: int | None = None) -> Any: ...
    def read_bytes(self, key: str) -> bytes: ...
    def read_strings(self, key: str, start: int = 0, stop: int | None = None) -> list[str]: ...
    def iter_blocks(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[Any]: ...
    def shape(self, key: str) -> tuple[int, ...]: ...
    def delete(self, prefix: str) -> None: ...


def array_store(config: Any) -> ArrayStoreForMigrations:
    """The store the caller of the migration passed in; a clear error when there is none and
    data has to move (the Alembic CLI alone does not know ARRAY_STORE)."""
    store = config.attributes.get("array_store") if config is not None else None
    if store is None:
        raise RuntimeError(
            "this revision moves arrays between the database and the array store, and no store "
            "was given: run `workbench migrate` (it uses ARRAY_STORE / DATA_DIR), or start the "
            "server, instead of the Alembic command line"
        )
    return store
