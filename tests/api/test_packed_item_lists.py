"""Long item lists of annotations are stored packed (`app/db/packed_items.py`) and every reader
(the API, undo and redo, side information, a run) sees the lists as written."""

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db.packed_items import MARK
from tests.api.test_runs import run_succeeded
from tests.conftest import upload_npy

pytestmark = pytest.mark.db

N_ITEMS = 4_000


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    rng = np.random.default_rng(0)
    blobs = np.concatenate(
        [rng.normal(0, 1, (N_ITEMS // 2, 2)), rng.normal(8, 1, (N_ITEMS // 2, 2))]
    )
    return upload_npy(client, project_id, admin_headers, blobs)


def stored_payload(session: Session, annotation_id: int) -> dict[str, object]:
    """The payload as the database holds it (JSON text on SQLite, json on PostgreSQL)."""
    raw = session.execute(
        text("select payload from annotations where id = :id"), {"id": annotation_id}
    ).scalar_one()
    return json.loads(raw) if isinstance(raw, str) else raw


def test_long_lists_are_packed_in_the_row_and_read_back_as_written(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    low = list(range(0, N_ITEMS // 2, 3))
    label = client.post(
        url, json={"kind": "label", "items": low, "label": "low"}, headers=admin_headers
    )
    assert label.status_code == 201, label.text
    assert label.json()["payload"]["items"] == low
    side_a, side_b = list(range(0, 600)), list(range(N_ITEMS - 600, N_ITEMS))
    cannot = client.post(
        url,
        json={"kind": "cannot_link", "items_a": side_a, "items_b": side_b},
        headers=admin_headers,
    ).json()
    short = client.post(url, json={"kind": "must_link", "items": [1, 2]}, headers=admin_headers)

    row = stored_payload(session, label.json()["id"])
    assert set(row["items"]) == {MARK}  # type: ignore[arg-type]
    assert len(json.dumps(row)) < len(json.dumps(low)) / 4
    assert set(stored_payload(session, cannot["id"])["items_a"]) == {MARK}  # type: ignore[arg-type]
    assert stored_payload(session, short.json()["id"])["items"] == [1, 2]  # short: plain

    listed = client.get(url, headers=admin_headers).json()["items"]
    by_id = {a["id"]: a["payload"] for a in listed}
    assert by_id[label.json()["id"]]["items"] == low
    assert by_id[cannot["id"]] == {"items_a": side_a, "items_b": side_b}

    info = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers)
    assert info.json()["n_labeled"] == len(low)

    assert client.post(f"{url}/undo", headers=admin_headers).status_code == 200  # the must-link
    assert client.post(f"{url}/undo", headers=admin_headers).status_code == 200  # the cannot-link
    redone = client.post(f"{url}/redo", headers=admin_headers).json()
    assert redone["annotation"]["payload"] == {"items_a": side_a, "items_b": side_b}

    run = run_succeeded(client, admin_headers, dataset_id, "cec-ib", n_clusters=2)
    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers)
    assert result.status_code == 200, result.text
    labels = np.asarray(result.json()["labels"])
    assert len(set(labels[low].tolist())) == 1  # the labelled items kept together


def test_rows_written_before_packing_still_read(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    items = list(range(500))
    created = client.post(
        url, json={"kind": "label", "items": items, "label": "a"}, headers=admin_headers
    )
    session.execute(
        text("update annotations set payload = :p where id = :id"),
        {"p": json.dumps({"items": items, "label": "a"}), "id": created.json()["id"]},
    )
    session.commit()
    assert stored_payload(session, created.json()["id"])["items"] == items  # plain, as of old
    listed = client.get(url, headers=admin_headers).json()["items"]
    assert listed[0]["payload"] == {"items": items, "label": "a"}
    info = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers)
    assert info.json()["n_labeled"] == 500
