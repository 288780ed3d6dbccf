"""views and undo (created 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

revision: str = "0002_views_undo"
down_revision: str | None = "0001_initial"


def upgrade() -> None:
    op.create_table(
        "views",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_views_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_views")),
    )
    with op.batch_alter_table("views", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_views_dataset_id"), ["dataset_id"], unique=False)

    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deleted_revision", sa.Integer(), nullable=True))

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("side_information", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("side_information")

    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.drop_column("deleted_revision")

    with op.batch_alter_table("views", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_views_dataset_id"))

    op.drop_table("views")
