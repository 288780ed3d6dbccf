"""An upload holds no database write transaction while it reads, checks and stores its bytes:
other users' annotations and sign-ins go through while it is held mid-way, its dataset is
invisible until complete, and an upload that fails mid-way leaves nothing behind.

SQLite's busy timeout is cut to 0.2 s here, so a write that had to wait for the upload would
be answered 503 at once (the upload used to hold the lock from its first insert to its end)."""

import io
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.models import Dataset, Project, StoredArray
from app.db.session import make_engine, make_session_factory
from app.services import deep_zoom, slides
from app.services.ingest import table_sink
from app.services.ingest.short_transactions import UPLOADING, writes_refused
from app.store import staged_files
from tests.api.test_slides import slide_file, slide_planes
from tests.conftest import ADMIN_PASSWORD, PASSWORD, token_headers, upload_npy

pytestmark = pytest.mark.db

FEATURES = np.array([[0.0, 0.0], [1.0, 0.5], [9.0, 8.5], [10.0, 9.5]])


def _png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (24, 24, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


class _Held:
    """Stops the upload at one function of its long part until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.reached.set()
            assert self.release.wait(60), "the test never released the upload"
            return original(*args, **kwargs)

        return held


def _table(client: TestClient, project_id: int, headers: dict[str, str]) -> Any:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(40.0).reshape(20, 2))
    files = {"file": ("held.npy", buffer.getvalue(), "application/octet-stream")}
    return client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=headers)


def _image(client: TestClient, project_id: int, headers: dict[str, str]) -> Any:
    files = {"file": ("held.png", _png(0), "image/png")}
    return client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=headers)


def _collection(client: TestClient, project_id: int, headers: dict[str, str]) -> Any:
    files = [("files", (f"c{i}.png", _png(i), "image/png")) for i in range(3)]
    return client.post(
        f"/api/v1/projects/{project_id}/collections",
        files=files,
        data={"name": "held"},
        headers=headers,
    )


def _slide(client: TestClient, project_id: int, headers: dict[str, str]) -> Any:
    planes, _ = slide_planes()
    files = {"file": ("held.ome.tif", slide_file(planes), "image/tiff")}
    return client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=headers)


# Each kind of upload, the function of its long part the test holds it at, and the upload.
UPLOADS: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    "table": (table_sink.TableSink, "add", _table),
    "image": (deep_zoom, "add_picture_pyramid", _image),
    "collection": (staged_files, "stage", _collection),
    "slide": (slides, "_write_picture_pyramid", _slide),
}


@pytest.fixture
def quick_pragmas(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    if not settings.database_url.startswith("sqlite"):
        return  # PostgreSQL: row locks; the upload must hold none on what others write
    original = _sqlite_pragmas()

    def quick(dbapi_connection: Any, record: Any) -> None:
        original(dbapi_connection, record)
        dbapi_connection.execute("PRAGMA busy_timeout=200")

    from app.db import session as db_session

    monkeypatch.setattr(db_session, "_sqlite_pragmas", quick)


def _sqlite_pragmas() -> Callable[[Any, Any], None]:
    from app.db import session as db_session

    return db_session._sqlite_pragmas


@pytest.fixture
def held_client(
    quick_pragmas: None, client_with: Callable[..., TestClient]
) -> Iterator[TestClient]:
    yield client_with(image_whole_pixels=100_000)  # the slide's 600 x 700 is a slide


@pytest.mark.parametrize("kind", list(UPLOADS))
def test_others_write_while_an_upload_is_held_mid_way(
    held_client: TestClient,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    client = held_client
    admin = token_headers(client, "admin", ADMIN_PASSWORD)
    project_id = client.post("/api/v1/projects", json={"name": "P"}, headers=admin).json()["id"]
    other = _member(client, settings, project_id)
    table_id = upload_npy(client, project_id, other, FEATURES)

    owner, name, upload = UPLOADS[kind]
    held = _Held()
    monkeypatch.setattr(owner, name, held.wrap(getattr(owner, name)))
    answer: dict[str, Any] = {}
    uploader = threading.Thread(
        target=lambda: answer.setdefault("upload", upload(client, project_id, admin))
    )
    uploader.start()
    try:
        assert held.reached.wait(60), "the upload never reached its long part"
        # Meanwhile another user signs in and annotates, several times.
        for k in range(3):
            signed_in = client.post(
                "/api/v1/auth/token", data={"username": "other", "password": PASSWORD}
            )
            assert signed_in.status_code == 200, signed_in.text
            posted = client.post(
                f"/api/v1/datasets/{table_id}/annotations",
                json={"kind": "label", "items": [k], "label": "a"},
                headers=other,
            )
            assert posted.status_code == 201, posted.text
        # and the dataset being uploaded is nowhere to be seen.
        listed = client.get(f"/api/v1/projects/{project_id}/datasets", headers=admin).json()
        assert [d["id"] for d in listed["items"]] == [table_id]
        for reserved in _uploading_ids(settings):
            seen = client.get(f"/api/v1/datasets/{reserved}", headers=admin)
            assert seen.status_code == 404, seen.text
    finally:
        held.release.set()
        uploader.join(60)
    assert answer["upload"].status_code == 201, answer["upload"].text
    assert _uploading_ids(settings) == []
    listed = client.get(f"/api/v1/projects/{project_id}/datasets", headers=admin).json()
    expected = 1 + (3 if kind == "collection" else 1)
    assert listed["total"] == expected
    assert all(d["status"] in ("ready", "featurizing") for d in listed["items"])


def test_an_upload_refused_mid_way_leaves_no_row_and_no_array(
    held_client: TestClient, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = held_client
    admin = token_headers(client, "admin", ADMIN_PASSWORD)
    project_id = client.post("/api/v1/projects", json={"name": "P"}, headers=admin).json()["id"]
    before = _counts(settings)
    assert _directories(settings) == []
    bad = np.arange(40.0).reshape(20, 2)
    bad[17, 1] = np.nan  # refused when the block is checked, after the row was reserved
    buffer = io.BytesIO()
    np.save(buffer, bad)
    files = {"file": ("bad.npy", buffer.getvalue(), "application/octet-stream")}
    response = client.post(f"/api/v1/projects/{project_id}/datasets", files=files, headers=admin)
    assert response.status_code == 422, response.text
    assert "NaN in column" in response.json()["detail"]
    assert _counts(settings) == before
    assert _directories(settings) == []


def test_an_upload_that_a_crash_interrupted_is_swept_at_start_up(
    client_with: Callable[..., TestClient], settings: Any
) -> None:
    client = client_with()
    admin = token_headers(client, "admin", ADMIN_PASSWORD)
    project_id = client.post("/api/v1/projects", json={"name": "P"}, headers=admin).json()["id"]
    factory = make_session_factory(make_engine(settings.database_url))
    with factory() as session:
        session.add(
            Dataset(
                project_id=project_id, name="crashed", kind="table", status=UPLOADING,
                n_items=0, n_features=1, feature_names=["x"], source_filename="x.csv", meta={},
            )
        )  # fmt: skip
        session.commit()
    assert len(_uploading_ids(settings)) == 1
    client_with()  # the next start
    assert _uploading_ids(settings) == []


def test_the_long_part_of_an_upload_cannot_write(session: Session) -> None:
    with writes_refused(session):
        session.add(
            Dataset(
                project_id=1, name="x", kind="table", status="ready", n_items=0,
                n_features=1, feature_names=["x"], source_filename="x.csv", meta={},
            )
        )  # fmt: skip
        with pytest.raises(RuntimeError, match="tried to write"):
            session.flush()
    session.rollback()


def _member(client: TestClient, settings: Any, project_id: int) -> dict[str, str]:
    admin = token_headers(client, "admin", ADMIN_PASSWORD)
    made = client.post(
        "/api/v1/users", json={"username": "other", "password": PASSWORD}, headers=admin
    )
    assert made.status_code == 201, made.text
    added = client.put(
        f"/api/v1/projects/{project_id}/members",
        json={"username": "other", "role": "editor"},
        headers=admin,
    )
    assert added.status_code == 200, added.text
    return token_headers(client, "other", PASSWORD)


def _uploading_ids(settings: Any) -> list[int]:
    factory = make_session_factory(make_engine(settings.database_url))
    with factory() as session:
        return list(session.scalars(select(Dataset.id).where(Dataset.status == UPLOADING)))


def _counts(settings: Any) -> tuple[int, int]:
    factory = make_session_factory(make_engine(settings.database_url))
    with factory() as session:
        datasets = len(list(session.scalars(select(Dataset.id))))
        arrays = len(list(session.scalars(select(StoredArray.id))))
    return datasets, arrays


def _directories(settings: Any) -> list[str]:
    store = Path(settings.array_store) / "datasets"
    return [p.name for p in store.iterdir() if p.is_dir()] if store.exists() else []


def test_an_upload_whose_project_is_deleted_meanwhile_is_refused_and_stores_nothing(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The project goes (its rows by cascade) while a collection's files are being kept."""
    original = staged_files.stage

    def deleted_meanwhile(*args: Any, **kwargs: Any) -> Any:
        info = original(*args, **kwargs)
        with client.app.state.session_factory() as other:
            other.execute(delete(Project).where(Project.id == project_id))
            other.commit()
        return info

    monkeypatch.setattr(staged_files, "stage", deleted_meanwhile)
    response = _collection(client, project_id, admin_headers)
    assert response.status_code == 409, response.text
    assert "deleted while the file was uploading" in response.text
    session.expire_all()
    assert session.scalars(select(Dataset)).all() == []
    assert session.scalars(select(StoredArray)).all() == []
