"""run attempts: a run counts the times a worker started it (a Dask task is started again on
another worker when its worker dies) and remembers the worker that runs it now

Created 2026-12-07.
"""

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import KEEP_IDS, check_foreign_keys, foreign_keys_off

revision: str = "0010_run_attempts"
down_revision: str | None = "0009_shared_side_information"


def upgrade() -> None:
    foreign_keys_off(op.get_bind())  # a rebuild of `runs` must not cascade to its results
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.add_column(sa.Column("attempt", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("worker_address", sa.String(255), nullable=True))
    check_foreign_keys(op.get_bind())


def downgrade() -> None:
    foreign_keys_off(op.get_bind())
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.drop_column("worker_address")
        batch.drop_column("attempt")
    check_foreign_keys(op.get_bind())
