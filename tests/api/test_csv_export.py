"""CSV exports are safe to open in a spreadsheet: a text cell starting with = + - @ tab or
carriage return gets a leading single quote (OWASP CSV injection); numbers are written as they
are. The run-result CSV and the workspace's labels-and-clusters CSV are both written by the server
with one helper."""

import csv
import io
import time

import pytest
from fastapi.testclient import TestClient

from app.services.csv_export import csv_text, spreadsheet_safe

DANGEROUS = {
    '=HYPERLINK("http://x","y")': '\'=HYPERLINK("http://x","y")',
    "+1": "'+1",
    "-1": "'-1",
    "@a": "'@a",
    "=1+2": "'=1+2",
    "\tx": "'\tx",
    "\rx": "'\rx",
}
HARMLESS = ["plain", "a=b", "1-2", "", " =x", "3"]


@pytest.mark.parametrize("text", list(DANGEROUS))
def test_text_that_would_start_a_formula_is_quoted(text: str) -> None:
    assert spreadsheet_safe(text) == DANGEROUS[text]


@pytest.mark.parametrize("text", HARMLESS)
def test_other_text_is_left_alone(text: str) -> None:
    assert spreadsheet_safe(text) == text


def test_numbers_are_never_mangled() -> None:
    text = csv_text(["item", "id", "cluster"], [(0, "-1", -1), (1, "=x", 2), (2, "ok", -3)])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [
        ["item", "id", "cluster"],
        ["0", "'-1", "-1"],
        ["1", "'=x", "2"],
        ["2", "ok", "-3"],
    ]


def test_a_quoted_formula_with_quotes_and_commas_round_trips_as_text() -> None:
    text = csv_text(["id"], [['=HYPERLINK("http://x","y")']])
    assert text.splitlines()[1] == '"\'=HYPERLINK(""http://x"",""y"")"'
    assert list(csv.reader(io.StringIO(text)))[1] == ['\'=HYPERLINK("http://x","y")']


@pytest.mark.db
def test_the_run_result_csv_quotes_formula_ids_and_keeps_numbers(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    ids = ['=HYPERLINK("x")', "+1", "-1", "@a", "=1+2", "plain", "b", "c"]
    lines = ["id,f0,f1"] + [
        f'"{value.replace(chr(34), chr(34) * 2)}",{i % 2 * 10 + i * 0.1},{i * 0.3}'
        for i, value in enumerate(ids)
    ]
    upload = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": ("ids.csv", "\n".join(lines).encode(), "text/csv")},
        data={"id_column": "id"},
        headers=admin_headers,
    )
    assert upload.status_code == 201, upload.text
    run = client.post(
        "/api/v1/runs",
        json={
            "dataset_id": upload.json()["id"],
            "algorithm": "cec",
            "params": {"n_clusters": 2, "n_init": 1, "covariance": "spherical"},
        },
        headers=admin_headers,
    )
    assert run.status_code == 202, run.text
    url = f"/api/v1/runs/{run.json()['id']}"
    deadline = time.monotonic() + 120
    while client.get(url, headers=admin_headers).json()["status"] not in (
        "succeeded",
        "failed",
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.get(url, headers=admin_headers).json()["status"] == "succeeded"
    labels = client.get(f"{url}/result", headers=admin_headers).json()["labels"]

    response = client.get(f"{url}/result?format=csv", headers=admin_headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == ["item", "id", "cluster"]
    assert [row[1] for row in rows[1:]] == [
        '\'=HYPERLINK("x")',
        "'+1",
        "'-1",
        "'@a",
        "'=1+2",
        "plain",
        "b",
        "c",
    ]
    assert [row[0] for row in rows[1:]] == [str(i) for i in range(len(ids))]
    assert [int(row[2]) for row in rows[1:]] == labels

    # The workspace's export: the same ids, each item's label (formula-quoted too) and cluster.
    dataset_id = upload.json()["id"]
    client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        json={"kind": "label", "items": [1, 2], "label": "=cmd"},
        headers=admin_headers,
    )
    export = client.get(
        f"/api/v1/datasets/{dataset_id}/labels-clusters.csv?run_id={run.json()['id']}",
        headers=admin_headers,
    )
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    assert "attachment" in export.headers["content-disposition"]
    table = list(csv.reader(io.StringIO(export.text)))
    assert table[0] == ["item", "id", "label", "cluster"]
    assert [row[1] for row in table[1:]] == [row[1] for row in rows[1:]]
    assert [row[2] for row in table[1:]] == ["", "'=cmd", "'=cmd", "", "", "", "", ""]
    assert [int(row[3]) for row in table[1:]] == labels
    without_run = client.get(
        f"/api/v1/datasets/{dataset_id}/labels-clusters.csv", headers=admin_headers
    )
    assert {row[3] for row in csv.reader(io.StringIO(without_run.text))} == {"cluster", ""}
    other = client.get(
        f"/api/v1/datasets/{dataset_id}/labels-clusters.csv?run_id=999999", headers=admin_headers
    )
    assert other.status_code == 404
