"""ids are never reused; a run remembers which worker claimed it

Revision ID: 0003_ids_never_reused
Revises: 0002_views_undo
Create Date: 2026-11-23 17:20:00

SQLite without AUTOINCREMENT gives a new row max(id) + 1, so deleting the newest run (or
dataset, project...) hands its id to the next one: a worker still running for the deleted run
would then write into someone else's. AUTOINCREMENT cannot be added in place; batch mode
rebuilds each table. Dropping the old table would cascade its deletes into the children, so
foreign keys are switched off first; that works only before this migration's first write, which
`transaction_per_migration` (env.py) guarantees. PostgreSQL sequences never reuse values.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import check_foreign_keys, foreign_keys_off

revision: str = "0003_ids_never_reused"
down_revision: str | None = "0002_views_undo"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("users", "api_tokens", "projects", "datasets", "annotations", "views", "runs")


def _rebuild(autoincrement: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    foreign_keys_off(bind)
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass
    check_foreign_keys(bind)


def upgrade() -> None:
    _rebuild(autoincrement=True)
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("worker_key", sa.String(length=32), nullable=True))


def downgrade() -> None:
    _rebuild(autoincrement=False)  # first: pragmas only apply before a revision's first write
    with op.batch_alter_table("runs") as batch:  # ids may be reused again below this revision
        batch.drop_column("worker_key")
