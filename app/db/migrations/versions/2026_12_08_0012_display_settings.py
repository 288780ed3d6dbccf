"""display settings: each user's display of a dataset's measured channels (visibility, colour
and range per channel)

Created 2026-12-08.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0012_display_settings"
down_revision: str | None = "0011_region_runs"


def upgrade() -> None:
    op.create_table(
        "display_settings",
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("channels", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_display_settings_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_display_settings_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("dataset_id", "user_id", name=op.f("pk_display_settings")),
    )
    with op.batch_alter_table("display_settings") as batch:
        batch.create_index(batch.f("ix_display_settings_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_table("display_settings")
