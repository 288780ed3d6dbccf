"""One version everywhere, read from the installed distribution's metadata; the default data
directory is the working directory's var/; a configured but missing extra says what to install."""

import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import sessionmaker

from app.config import Settings
from app.db.session import make_engine
from app.jobs.execute.dask_executor import DaskExecutor, Places


def test_the_version_is_the_distributions_everywhere_it_is_shown(client: TestClient) -> None:
    expected = version("clustering-workbench")
    assert client.get("/api/v1/health").json()["version"] == expected
    assert client.get("/openapi.json").json()["info"]["version"] == expected
    assert f"Clustering workbench {expected}</footer>" in client.get("/login").text


def test_the_default_database_lives_in_the_working_directorys_var(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("DATABASE_URL", "DATA_DIR", "PORT", "HOST"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.database_url == f"sqlite:///{tmp_path / 'var' / 'workbench.db'}"
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PORT", "9000")
    moved = Settings(_env_file=None)  # type: ignore[call-arg]
    assert moved.database_url == f"sqlite:///{tmp_path / 'elsewhere' / 'workbench.db'}"
    assert moved.port == 9000


def test_dask_configured_without_its_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(RuntimeError, match=r"pip install 'clustering-workbench\[dask\]'"):
        DaskExecutor("tcp://127.0.0.1:1", Places("sqlite://", "unused"), 64, sessionmaker())


def test_postgres_configured_without_its_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("app.db.session.find_spec", lambda _name: None)
    with pytest.raises(RuntimeError, match=r"pip install 'clustering-workbench\[postgres\]'"):
        make_engine("postgresql+psycopg://u:p@127.0.0.1/db")
