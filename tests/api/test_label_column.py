"""A table's expert labels as a column (`label_column`), at upload and at import by reference:
kept out of the features, they become ordinary label annotations when the dataset is ready (one
per label with all its rows, one act by the user who brought the table, undone by one undo);
a column that is missing, or is the id or ground-truth column, is refused (422), and so is a
label too long or a column of too many labels, naming the row and the value, nothing stored
(by reference: the background read fails saying so)."""

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.services.annotations import MAX_LABEL_LENGTH
from app.services.ingest.label_column import MAX_LABELS
from tests.api.test_image_featurization import wait_ready
from tests.api.test_runs import start, wait
from tests.conftest import admin_project, post_dataset, row_counts

pytestmark = pytest.mark.db

N_ROWS = 150
# Every third row labelled by the expert; 3 and 3.0 (a spreadsheet's float column) are one label.
EXPERT = ["a", "", "", "b", "", "", "3", "", "", "3.0", "", ""]


def expert(i: int) -> str:
    return EXPERT[i % len(EXPERT)]


def expected_labels(values: list[str | None]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for row, value in enumerate(values):
        if value in (None, ""):
            continue
        label = "3" if value in ("3", "3.0") else value
        found.setdefault(label, []).append(row)
    return found


def csv_body(rows: int = N_ROWS, label: Callable[[int], str] = expert) -> bytes:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [6.0, 6.0], [0.0, 8.0]])
    lines = ["key,x,y,species,expert"]
    for i in range(rows):
        x, y = centres[i % 3] + rng.normal(scale=0.5, size=2)
        lines.append(f"item-{i},{x:.5f},{y:.5f},s{i % 3},{label(i)}")
    return ("\n".join(lines) + "\n").encode()


def upload(client: TestClient, project_id: int, headers: dict[str, str], body: bytes, **form: str):  # type: ignore[no-untyped-def]
    return post_dataset(client, project_id, headers, "cells.csv", body, "text/csv", **form)


def annotations(
    client: TestClient, headers: dict[str, str], dataset_id: int, **params: Any
) -> dict[str, Any]:
    response = client.get(
        f"/api/v1/datasets/{dataset_id}/annotations", params=params, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def labels_of(page: dict[str, Any]) -> dict[str, list[int]]:
    assert {a["kind"] for a in page["items"]} <= {"label"}
    return {a["payload"]["label"]: a["payload"]["items"] for a in page["items"]}


def me(client: TestClient, headers: dict[str, str]) -> int:
    return int(client.get("/api/v1/auth/me", headers=headers).json()["id"])


def test_an_uploaded_label_column_becomes_one_undoable_act_of_label_annotations(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    response = upload(
        client, project_id, admin_headers, csv_body(),
        id_column="key", ground_truth_column="species", label_column="expert",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["status"] == "ready" and dataset["n_items"] == N_ROWS
    assert dataset["label_column"] == "expert"
    assert dataset["feature_names"] == ["x", "y"]  # the labels are not a feature
    assert "expert" not in dataset["meta"]["ignored_columns"]
    assert dataset["revision"] == 1  # one act

    page = annotations(client, admin_headers, dataset["id"])
    assert page["total"] == 3 and page["revision"] == 1 and page["can_undo"]
    assert labels_of(page) == expected_labels([expert(i) for i in range(N_ROWS)])
    assert [a["payload"]["label"] for a in page["items"]] == ["3", "a", "b"]  # numbers first
    assert {a["revision"] for a in page["items"]} == {1}
    assert {a["author_id"] for a in page["items"]} == {me(client, admin_headers)}

    read = client.get(f"/api/v1/datasets/{dataset['id']}", headers=admin_headers).json()
    assert read["label_column"] == "expert" and read["ground_truth_column"] == "species"

    undone = client.post(
        f"/api/v1/datasets/{dataset['id']}/annotations/undo", headers=admin_headers
    )
    assert undone.status_code == 200, undone.text
    assert undone.json()["count"] == 3
    assert annotations(client, admin_headers, dataset["id"])["total"] == 0
    redone = client.post(
        f"/api/v1/datasets/{dataset['id']}/annotations/redo", headers=admin_headers
    )
    assert redone.status_code == 200 and redone.json()["count"] == 3


def test_a_column_without_a_label_makes_no_act(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    response = upload(
        client, project_id, admin_headers, csv_body(label=lambda i: ""), label_column="expert"
    )
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["revision"] == 0 and dataset["label_column"] == "expert"
    assert annotations(client, admin_headers, dataset["id"])["total"] == 0


def test_a_parquet_upload_reads_numbers_and_nulls(
    client: TestClient, project_id: int, admin_headers: dict[str, str], tmp_path: Path
) -> None:
    x = np.arange(40, dtype=np.float64)
    kind = [3.0, float("nan"), 7.0, None] * 10
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": x, "y": x % 7, "kind": pa.array(kind, pa.float64())}), path)
    response = post_dataset(
        client, project_id, admin_headers, "t.parquet", path.read_bytes(), label_column="kind"
    )
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["feature_names"] == ["x", "y"]
    page = annotations(client, admin_headers, dataset["id"])
    assert labels_of(page) == {"3": list(range(0, 40, 4)), "7": list(range(2, 40, 4))}


def test_a_run_of_cec_ib_after_the_upload_uses_the_labels(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    label = lambda i: f"s{i % 3}" if i % 5 == 0 else ""  # noqa: E731
    response = upload(
        client, project_id, admin_headers, csv_body(label=label), label_column="expert"
    )
    assert response.status_code == 201, response.text
    dataset_id = response.json()["id"]
    side = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=admin_headers)
    assert side.status_code == 200, side.text
    info = side.json()
    n_labeled = len(range(0, N_ROWS, 5))
    assert info["n_labeled"] == n_labeled and info["revision"] == 1
    assert sorted(info["label_names"]) == ["s0", "s1", "s2"]
    assert info["labeled_items"]["s1"] == [i for i in range(0, N_ROWS, 5) if i % 3 == 1]

    run = start(client, admin_headers, dataset_id, "cec-ib", n_clusters=3, random_state=0)
    assert run.status_code in (200, 201, 202), run.text
    finished = wait(client, admin_headers, run.json()["id"])
    assert finished["status"] == "succeeded", finished
    assert finished["annotation_revision"] == 1  # the run was given the labels


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ({"label_column": "opinion"}, ["label_column", "'opinion'", "not a column"]),
        (
            {"ground_truth_column": "species", "label_column": "species"},
            ["label_column", "'species'", "ground_truth_column"],
        ),
        ({"id_column": "key", "label_column": "key"}, ["label_column", "'key'", "id_column"]),
    ],
)
def test_a_label_column_that_is_missing_or_another_column_is_refused(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    form: dict[str, str],
    words: list[str],
) -> None:
    before = row_counts(session)
    response = upload(client, project_id, admin_headers, csv_body(), **form)
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["detail"], response.text
    assert row_counts(session) == before


def test_a_label_too_long_or_one_label_too_many_is_refused_naming_row_and_value(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    before = row_counts(session)
    long = "z" * (MAX_LABEL_LENGTH + 1)
    body = csv_body(label=lambda i: long if i in (97, 120) else expert(i))
    response = upload(client, project_id, admin_headers, body, label_column="expert")
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "row 98" in detail and long in detail and "'expert'" in detail, detail

    many = csv_body(rows=MAX_LABELS + 20, label=lambda i: f"L{i}")
    response = upload(client, project_id, admin_headers, many, label_column="expert")
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert f"row {MAX_LABELS + 1}" in detail and f"'L{MAX_LABELS}'" in detail, detail
    assert row_counts(session) == before


# -- imported by reference ----------------------------------------------------------------------


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    root.mkdir()
    return root


@pytest.fixture
def file_client(client_with: Callable[..., TestClient], shared: Path) -> TestClient:
    return client_with(import_sources={f"file://{shared}/": {}})


def write_parts(folder: Path, labels: list[Any], label_type: pa.DataType, parts: int = 3) -> None:
    """A Parquet dataset of ``parts`` files: an id, two features, a class and the labels."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = len(labels)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(rows, 2)) + np.repeat([[0.0, 0.0], [5.0, 5.0]], (rows + 1) // 2, 0)[:rows]
    bounds = np.linspace(0, rows, parts + 1).astype(int)
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        table = pa.table(
            {
                "cell": [f"cell-{i}" for i in range(a, b)],
                "f0": X[a:b, 0],
                "f1": X[a:b, 1],
                "kind": [f"k{i % 2}" for i in range(a, b)],
                "expert": pa.array(labels[a:b], label_type),
            }
        )
        pq.write_table(table, folder / f"part-{k:04d}.parquet", row_group_size=50)


def post_import(client: TestClient, headers: dict[str, str], project_id: int, **body: Any) -> Any:
    return client.post(f"/api/v1/projects/{project_id}/datasets/import", json=body, headers=headers)


def test_an_imported_label_column_becomes_label_annotations_once_the_table_is_read(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    labels: list[Any] = [["tumour", None, "", "stroma", " stroma "][i % 5] for i in range(400)]
    write_parts(shared / "cells", labels, pa.string())
    response = post_import(
        client, headers, project_id, name="cells", url=f"file://{shared}/cells/",
        id_column="cell", ground_truth_column="kind", label_column="expert",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["status"] == "featurizing" and made["label_column"] == "expert"
    assert made["feature_names"] == ["f0", "f1"]
    assert annotations(client, headers, made["id"])["total"] == 0  # not before it is ready

    dataset = wait_ready(client, headers, made["id"])
    assert dataset["status"] == "ready", dataset
    assert dataset["label_column"] == "expert" and dataset["revision"] == 1
    page = annotations(client, headers, dataset["id"])
    assert labels_of(page) == {
        "stroma": sorted([*range(3, 400, 5), *range(4, 400, 5)]),
        "tumour": list(range(0, 400, 5)),
    }
    assert {a["revision"] for a in page["items"]} == {1}
    assert {a["author_id"] for a in page["items"]} == {me(client, headers)}
    side = client.get(f"/api/v1/datasets/{dataset['id']}/side-information", headers=headers)
    assert side.json()["n_labeled"] == 3 * 80

    undone = client.post(f"/api/v1/datasets/{dataset['id']}/annotations/undo", headers=headers)
    assert undone.status_code == 200 and undone.json()["count"] == 2
    assert annotations(client, headers, dataset["id"])["total"] == 0


def test_an_imported_float_label_column_gives_numbers_as_text(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    labels = [[1.0, float("nan"), 2.5, None][i % 4] for i in range(120)]
    write_parts(shared / "floats", labels, pa.float64())
    response = post_import(
        client, headers, project_id, name="f", url=f"file://{shared}/floats/",
        label_column="expert",
    )  # fmt: skip
    assert response.status_code == 201, response.text
    assert response.json()["feature_names"] == ["f0", "f1"]  # a numeric label is no feature
    dataset = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "ready", dataset
    page = annotations(client, headers, dataset["id"])
    assert labels_of(page) == {"1": list(range(0, 120, 4)), "2.5": list(range(2, 120, 4))}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"label_column": "opinion"}, ["label_column", "'opinion'", "no column"]),
        ({"ground_truth_column": "kind", "label_column": "kind"}, ["'kind'", "ground_truth"]),
        ({"id_column": "cell", "label_column": "cell"}, ["'cell'", "id_column"]),
        ({"columns": ["f0", "f1", "expert"], "label_column": "expert"}, ["'expert'", "feature"]),
    ],
)
def test_an_import_naming_a_wrong_label_column_is_refused_and_registers_nothing(
    file_client: TestClient,
    shared: Path,
    session: Session,
    body: dict[str, Any],
    words: list[str],
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    write_parts(shared / "cells", [1.0] * 30, pa.float64())
    before = row_counts(session)
    response = post_import(
        client, headers, project_id, name="c", url=f"file://{shared}/cells/", **body
    )
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["detail"], response.text
    assert row_counts(session) == before


def test_a_label_only_the_read_sees_fails_the_dataset_naming_object_row_and_value(
    file_client: TestClient, shared: Path
) -> None:
    client = file_client
    headers, project_id = admin_project(client)
    long = "q" * (MAX_LABEL_LENGTH + 5)
    labels = [long if i == 250 else "ok" for i in range(300)]
    write_parts(shared / "long", labels, pa.string())
    response = post_import(
        client, headers, project_id, name="l", url=f"file://{shared}/long/", label_column="expert"
    )
    assert response.status_code == 201, response.text
    dataset = wait_ready(client, headers, response.json()["id"])
    assert dataset["status"] == "failed", dataset
    error = dataset["featurization"]["error"]
    assert "part-0002.parquet" in error and "row 250" in error and long in error, error
    assert "'expert'" in error, error
    assert annotations(client, headers, dataset["id"])["total"] == 0
    views = client.get(f"/api/v1/datasets/{dataset['id']}/views", headers=headers).json()
    assert views["total"] == 0
