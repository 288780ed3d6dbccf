"""Helpers for Alembic revisions that rebuild SQLite tables (batch mode copies a table into a
new one, drops the old one and renames the new one).

Two traps: dropping the old table runs its ON DELETE CASCADE actions when foreign keys are on
(run_results would be emptied with runs), and the new table is made from reflection, which
does not know AUTOINCREMENT, so ids would be reused again (see NEVER_REUSE_IDS)."""

from typing import Any

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
