"""Run Alembic programmatically (start-up, tests, `workbench migrate`).

The Alembic configuration and revisions ship inside the package (app/db/alembic.ini and
app/db/migrations), so an installed wheel migrates without a source checkout. Developers run
the Alembic CLI with `-c app/db/alembic.ini`."""

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config

HERE = Path(__file__).resolve().parent
ALEMBIC_INI = HERE / "alembic.ini"
MIGRATIONS = HERE / "migrations"


def alembic_config(
    database_url: str, array_store: tuple[str, dict[str, Any]] | None = None
) -> Config:
    """``array_store`` (location, fsspec options): where the revision that moved arrays out of
    SQL puts them (default: the settings' ARRAY_STORE)."""
    config = Config(str(ALEMBIC_INI))
    if array_store is not None:
        config.attributes["array_store"] = array_store
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser treats % as interpolation; URLs may contain it (escaped passwords).
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_to_head(
    database_url: str, array_store: tuple[str, dict[str, Any]] | None = None
) -> None:
    command.upgrade(alembic_config(database_url, array_store), "head")


def downgrade_to_base(
    database_url: str, array_store: tuple[str, dict[str, Any]] | None = None
) -> None:
    command.downgrade(alembic_config(database_url, array_store), "base")
