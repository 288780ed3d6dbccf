"""Annotations that name items by the dataset's id column (`item_ids`, `item_ids_a`,
`item_ids_b`) are stored exactly as the same annotation by row position; an unknown id is a
422 that names it, and nothing is written."""

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.conftest import row_counts, upload_npy

pytestmark = pytest.mark.db

# Ids in another order than the rows, so a position and an id never coincide.
IDS = ["p7", "p3", "p9", "q1", "q4", "q2"]


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    rows = [f"{item_id},{k},{k % 2}" for k, item_id in enumerate(IDS)]
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("ids.csv", "\n".join(["key,a,b", *rows]).encode(), "text/csv")},
        data={"id_column": "key"},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def annotate(client: TestClient, dataset_id: int, headers: dict[str, str], **body: object):  # type: ignore[no-untyped-def]
    return client.post(f"/api/v1/datasets/{dataset_id}/annotations", json=body, headers=headers)


@pytest.mark.parametrize(
    ("by_id", "by_position"),
    [
        (
            {"kind": "label", "item_ids": ["q2", "p3"], "label": "x"},
            {"kind": "label", "items": [5, 1], "label": "x"},
        ),
        (
            {"kind": "must_link", "item_ids": ["p9", "q1", "p9"]},
            {"kind": "must_link", "items": [2, 3]},
        ),
        (
            {"kind": "cannot_link", "item_ids_a": ["p7"], "item_ids_b": ["q4", "q2"]},
            {"kind": "cannot_link", "items_a": [0], "items_b": [4, 5]},
        ),
    ],
)
def test_naming_items_by_id_stores_what_naming_them_by_position_does(
    client: TestClient,
    dataset_id: int,
    admin_headers: dict[str, str],
    by_id: dict[str, object],
    by_position: dict[str, object],
) -> None:
    named = annotate(client, dataset_id, admin_headers, **by_id)
    placed = annotate(client, dataset_id, admin_headers, **by_position)
    assert named.status_code == placed.status_code == 201, (named.text, placed.text)
    assert named.json()["kind"] == placed.json()["kind"]
    assert named.json()["payload"] == placed.json()["payload"]


def test_an_unknown_id_is_refused_by_name_and_nothing_is_written(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    before = row_counts(session)
    response = annotate(
        client, dataset_id, admin_headers, kind="cannot_link", item_ids_a=["p7"],
        item_ids_b=["q4", "zz", "p3 "],
    )  # fmt: skip
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_input" and "errors" not in body
    assert "item_ids_b" in body["detail"] and "'zz'" in body["detail"]
    assert "'p3 '" in body["detail"]  # ids are matched exactly, not trimmed
    assert "'key'" in body["detail"]  # says which column ids come from
    assert row_counts(session) == before
    dataset = client.get(f"/api/v1/datasets/{dataset_id}", headers=admin_headers).json()
    assert dataset["revision"] == 0


def test_items_and_item_ids_together_are_refused_by_the_schema(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    response = annotate(
        client, dataset_id, admin_headers, kind="label", items=[0], item_ids=["p7"], label="x"
    )
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input" and response.json()["errors"]
    mixed = annotate(client, dataset_id, admin_headers, kind="cannot_link", items_a=[0],
                     item_ids_b=["p3"])  # fmt: skip
    assert mixed.status_code == 422


def test_without_an_id_column_the_ids_are_row_numbers_as_text(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    plain = upload_npy(client, project_id, admin_headers, np.arange(8.0).reshape(4, 2))
    ok = annotate(client, plain, admin_headers, kind="must_link", item_ids=["3", "0"])
    assert ok.status_code == 201 and ok.json()["payload"] == {"items": [0, 3]}
    missing = annotate(client, plain, admin_headers, kind="label", item_ids=["4"], label="x")
    assert missing.status_code == 422
    assert "row numbers 0 to 3" in missing.json()["detail"]
