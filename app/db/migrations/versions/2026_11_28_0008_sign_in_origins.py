"""sign-in origins: a token remembers the address and browser it was issued to and the address
it was last used from, so its owner can tell their sessions apart and revoke the odd one

Created 2026-11-28.
"""

import sqlalchemy as sa
from alembic import op

from app.db.migration_tools import KEEP_IDS

revision: str = "0008_sign_in_origins"
down_revision: str | None = "0007_run_labels_in_store"

_COLUMNS = (("created_from", 64), ("user_agent", 200), ("last_used_from", 64))


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", table_kwargs=KEEP_IDS) as batch:
        for name, length in _COLUMNS:
            batch.add_column(sa.Column(name, sa.String(length), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", table_kwargs=KEEP_IDS) as batch:
        for name, _ in reversed(_COLUMNS):
            batch.drop_column(name)
