"""image runs: a run may apply another run's fitted model; results keep the model and a mask

Created 2026-11-23.
"""

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import KEEP_IDS, check_foreign_keys, foreign_keys_off

revision: str = "0005_image_runs"
down_revision: str | None = "0004_login_throttles"


def upgrade() -> None:
    foreign_keys_off(op.get_bind())  # adding a foreign key rebuilds `runs` on SQLite
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.add_column(sa.Column("source_run_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_runs_source_run_id_runs", "runs", ["source_run_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("run_results") as batch:
        batch.add_column(sa.Column("model", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("mask", sa.LargeBinary(), nullable=True))

    check_foreign_keys(op.get_bind())


def downgrade() -> None:
    foreign_keys_off(op.get_bind())
    with op.batch_alter_table("run_results") as batch:
        batch.drop_column("mask")
        batch.drop_column("model")
    with op.batch_alter_table("runs", table_kwargs=KEEP_IDS) as batch:
        batch.drop_constraint("fk_runs_source_run_id_runs", type_="foreignkey")
        batch.drop_column("source_run_id")
    check_foreign_keys(op.get_bind())
