"""ids are never reused; a run remembers which worker claimed it (created 2026-11-23)."""

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import check_foreign_keys, foreign_keys_off

revision: str = "0003_ids_never_reused"
down_revision: str | None = "0002_views_undo"

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
