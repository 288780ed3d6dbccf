"""One Alembic chain for SQLite and PostgreSQL: it goes down and up cleanly, and the models and
the migrations describe the same schema."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect

from app.db.base import Base
from app.db.migrate import downgrade_to_base, upgrade_to_head

pytestmark = pytest.mark.db


def _autogenerate_diff(engine: Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def test_models_and_migrations_agree(db_engine: Engine) -> None:
    assert _autogenerate_diff(db_engine) == []


def test_downgrade_to_base_then_upgrade_to_head(db_engine: Engine, database_url: str) -> None:
    model_tables = set(Base.metadata.tables)
    try:
        downgrade_to_base(database_url)
        left = set(inspect(db_engine).get_table_names()) - {"alembic_version"}
        assert left == set()
    finally:
        upgrade_to_head(database_url)  # the rest of the suite needs the schema back
    assert model_tables <= set(inspect(db_engine).get_table_names())
    assert _autogenerate_diff(db_engine) == []


def test_ids_are_never_reused_after_any_migration(db_engine: Engine) -> None:
    """Every table addressed by id keeps AUTOINCREMENT on SQLite, whichever revision rebuilt it
    last (a rebuild from reflection silently drops it)."""
    if db_engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL sequences never reuse ids")
    from app.db.base import NEVER_REUSE_IDS

    tables = [t.name for t in Base.metadata.sorted_tables if t.kwargs == NEVER_REUSE_IDS]
    assert "runs" in tables and "datasets" in tables
    with db_engine.connect() as conn:
        for table in tables:
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).scalar_one()
            assert "AUTOINCREMENT" in sql, table
