"""login throttles: recent failed sign-ins per username and per client address

Created 2026-11-23.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0004_login_throttles"
down_revision: str | None = "0003_ids_never_reused"


def upgrade() -> None:
    op.create_table(
        "login_throttles",
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_login_throttles")),
    )


def downgrade() -> None:
    op.drop_table("login_throttles")
