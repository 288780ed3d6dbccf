"""image runs: a run may apply another run's fitted model; results keep the model and a mask

Revision ID: 0005_image_runs
Revises: 0004_login_throttles
Create Date: 2026-11-23 17:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_image_runs"
down_revision: str | None = "0004_login_throttles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("source_run_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_runs_source_run_id_runs", "runs", ["source_run_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("run_results") as batch:
        batch.add_column(sa.Column("model", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("mask", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_results") as batch:
        batch.drop_column("mask")
        batch.drop_column("model")
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint("fk_runs_source_run_id_runs", type_="foreignkey")
        batch.drop_column("source_run_id")
