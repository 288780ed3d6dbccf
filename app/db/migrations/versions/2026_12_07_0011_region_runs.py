"""region runs: a run on a slide may cover only a region of it (level-0 pixels), fitted on the
scribbled items and a sample, applied to the region's items only

Created 2026-12-07.
"""

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import KEEP_IDS, check_foreign_keys, foreign_keys_off

revision: str = "0011_region_runs"
down_revision: str | None = "0010_run_attempts"


def upgrade() -> None:
    foreign_keys_off(op.get_bind())  # a rebuild of `runs` must not cascade to its results
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.add_column(sa.Column("region", sa.JSON(), nullable=True))
    check_foreign_keys(op.get_bind())


def downgrade() -> None:
    foreign_keys_off(op.get_bind())
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.drop_column("region")
    check_foreign_keys(op.get_bind())
