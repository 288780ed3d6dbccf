"""Run Alembic programmatically (start-up, tests, `workbench migrate`).

The Alembic configuration and revisions ship inside the package (app/db/alembic.ini and
app/db/migrations), so an installed wheel migrates without a source checkout. Developers run
the Alembic CLI with `-c app/db/alembic.ini`."""

from pathlib import Path

from alembic import command
from alembic.config import Config

from app.db.migration_tools import ArrayStoreForMigrations

HERE = Path(__file__).resolve().parent
ALEMBIC_INI = HERE / "alembic.ini"
MIGRATIONS = HERE / "migrations"


def alembic_config(database_url: str, array_store: ArrayStoreForMigrations | None = None) -> Config:
    """``array_store``: where the revisions that move arrays out of SQL put them (needed only
    when there are arrays to move)."""
    config = Config(str(ALEMBIC_INI))
    if array_store is not None:
        config.attributes["array_store"] = array_store
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser treats % as interpolation; URLs may contain it (escaped passwords).
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_to_head(database_url: str, array_store: ArrayStoreForMigrations | None = None) -> None:
    command.upgrade(alembic_config(database_url, array_store), "head")


def downgrade_to_base(
    database_url: str, array_store: ArrayStoreForMigrations | None = None
) -> None:
    command.downgrade(alembic_config(database_url, array_store), "base")
