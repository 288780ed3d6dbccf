"""First start: the admin account (named by settings or generated and printed once) and the
Demo project with datasets that ship offline."""

import io
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import load_iris
from sqlalchemy import Engine

from app.config import Settings
from app.main import create_app
from tests.conftest import _empty_tables, token_headers

pytestmark = pytest.mark.db


@pytest.fixture
def fresh(db_engine: Engine) -> Iterator[None]:
    _empty_tables(db_engine)
    yield
    _empty_tables(db_engine)


def _start(settings: Settings) -> None:
    with TestClient(create_app(settings)):
        pass


def test_generated_admin_password_is_printed_once_and_works(
    fresh: None, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(database_url=database_url, load_demo_data=False, migrate_on_start=False)
    _start(settings)
    out = capsys.readouterr().out
    assert "username: admin" in out
    password = out.split("password: ")[1].split()[0]
    _start(settings)
    assert "password:" not in capsys.readouterr().out  # second start: nothing printed
    with TestClient(create_app(settings)) as client:
        token_headers(client, "admin", password)


def test_admin_credentials_come_from_settings(fresh: None, database_url: str) -> None:
    settings = Settings(
        database_url=database_url,
        admin_username="root-user",
        admin_password="chosen-pass-1",
        load_demo_data=False,
        migrate_on_start=False,
    )
    with TestClient(create_app(settings)) as client:
        headers = token_headers(client, "root-user", "chosen-pass-1")
        assert client.get("/api/v1/auth/me", headers=headers).json()["is_admin"] is True


def test_demo_project_holds_iris_wine_digits_and_a_picture(fresh: None, database_url: str) -> None:
    settings = Settings(
        database_url=database_url, admin_password="chosen-pass-1", migrate_on_start=False
    )
    with TestClient(create_app(settings)) as client:
        headers = token_headers(client, "admin", "chosen-pass-1")
        projects = client.get("/api/v1/projects", headers=headers).json()["items"]
        assert [p["name"] for p in projects] == ["Demo"]
        datasets = client.get(
            f"/api/v1/projects/{projects[0]['id']}/datasets", headers=headers
        ).json()["items"]
        by_name = {d["name"]: d for d in datasets}
        assert set(by_name) == {"iris", "wine", "digits", "coffee"}
        assert (by_name["iris"]["n_items"], by_name["iris"]["n_features"]) == (150, 4)
        assert by_name["iris"]["ground_truth_classes"] == ["setosa", "versicolor", "virginica"]
        assert (by_name["wine"]["n_items"], len(by_name["wine"]["ground_truth_classes"])) == (
            178,
            3,
        )
        assert (by_name["digits"]["n_items"], by_name["digits"]["n_features"]) == (1797, 64)
        assert len(by_name["digits"]["ground_truth_classes"]) == 10
        assert by_name["coffee"]["kind"] == "image"
        features = client.get(f"/api/v1/datasets/{by_name['iris']['id']}/features", headers=headers)
        np.testing.assert_array_equal(np.load(io.BytesIO(features.content)), load_iris().data)
    # A restart does not load the demo a second time.
    with TestClient(create_app(settings)) as client:
        headers = token_headers(client, "admin", "chosen-pass-1")
        assert client.get("/api/v1/projects", headers=headers).json()["total"] == 1
