"""A fitted run applied to a collection of images over REST: one run per image, progress per
image, cancel, the masks as a ZIP (PNG or TIFF); one bad image queues nothing."""

import io
import zipfile
from typing import Any

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy.orm import Session

from app.engine.image.masks import mean_iou
from tests.api.test_image_featurization import wait_ready
from tests.api.test_runs import run_to_end, upload_csv, wait
from tests.api.test_tiff_uploads import (
    NAMES,
    cells,
    ome_tiff,
    scribble_cell_and_background,
    upload_tiff,
)
from tests.conftest import row_counts

pytestmark = pytest.mark.db


@pytest.fixture
def fitted_run(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    """PPC fitted on scribbles over a 4-channel 16-bit image."""
    planes, truth = cells()
    dataset = upload_tiff(client, project_id, admin_headers, ome_tiff(planes, NAMES), truth)
    wait_ready_id(client, admin_headers, dataset["id"])
    scribble_cell_and_background(client, admin_headers, dataset["id"])
    run = run_to_end(client, admin_headers, dataset["id"], "ppc")
    assert run["status"] == "succeeded", run
    return int(run["id"])


def wait_ready_id(client: TestClient, headers: dict[str, str], dataset_id: int) -> None:
    assert wait_ready(client, headers, dataset_id)["status"] == "ready"


def collection(
    client: TestClient, project_id: int, headers: dict[str, str], n: int, seed: int = 10
) -> tuple[list[int], list[np.ndarray]]:
    ids, truths = [], []
    for k in range(n):
        planes, truth = cells(seed=seed + k)
        made = upload_tiff(
            client, project_id, headers, ome_tiff(planes, NAMES), truth, f"well {k}.ome.tif"
        )
        ids.append(made["id"])
        truths.append(truth)
    return ids, truths


def apply(client: TestClient, headers: dict[str, str], run_id: int, body: dict[str, Any]) -> Any:
    return client.post(f"/api/v1/runs/{run_id}/apply", json=body, headers=headers)


def test_a_collection_is_segmented_and_its_masks_exported(
    client: TestClient, project_id: int, admin_headers: dict[str, str], fitted_run: int
) -> None:
    ids, truths = collection(client, project_id, admin_headers, 3)
    response = apply(client, admin_headers, fitted_run, {"dataset_ids": ids})
    assert response.status_code == 202, response.text
    items = response.json()["items"]
    assert [r["dataset_id"] for r in items] == ids
    assert all(r["source_run_id"] == fitted_run and r["status"] == "queued" for r in items)
    finished = [wait(client, admin_headers, r["id"]) for r in items]
    assert [r["status"] for r in finished] == ["succeeded"] * 3
    listed = client.get(f"/api/v1/runs/{fitted_run}/applied", headers=admin_headers).json()
    assert [r["id"] for r in listed["items"]] == [r["id"] for r in items]

    archive = client.get(f"/api/v1/runs/{fitted_run}/applied/masks.zip", headers=admin_headers)
    assert archive.status_code == 200 and archive.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(archive.content)) as zipped:
        assert zipped.namelist() == [f"{i}-well_{k}.png" for k, i in enumerate(ids)]
        pngs = [np.asarray(Image.open(io.BytesIO(zipped.read(n)))) for n in zipped.namelist()]
    source = client.get(f"/api/v1/runs/{fitted_run}/result", headers=admin_headers).json()
    for run, mask, truth in zip(items, pngs, truths, strict=True):
        single = client.get(f"/api/v1/runs/{run['id']}/result.png", headers=admin_headers)
        np.testing.assert_array_equal(mask, np.asarray(Image.open(io.BytesIO(single.content))))
        assert mean_iou(truth, mask.astype(np.int64)) > 0.9
        # Cluster ids mean what they meant in the fitted run: the cell's centre is "cell".
        assert source["cluster_labels"][mask[32, 36]] == "cell"
    as_tiff = client.get(
        f"/api/v1/runs/{fitted_run}/applied/masks.zip",
        params={"format": "tiff"},
        headers=admin_headers,
    )
    with zipfile.ZipFile(io.BytesIO(as_tiff.content)) as zipped:
        tiffs = [tifffile.imread(io.BytesIO(zipped.read(n))) for n in zipped.namelist()]
    for png, tiff in zip(pngs, tiffs, strict=True):
        np.testing.assert_array_equal(png, tiff)


def test_one_image_that_cannot_be_segmented_queues_nothing(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    fitted_run: int,
    session: Session,
) -> None:
    ids, _ = collection(client, project_id, admin_headers, 2)
    table = upload_csv(client, project_id, admin_headers, np.array([[1.0, 2.0], [3.0, 4.0]]))
    three, truth = cells(seed=3, n_channels=3)
    other = upload_tiff(client, project_id, admin_headers, ome_tiff(three, NAMES[:3]), truth)
    for dataset_id in (*ids, other["id"]):  # featurized, so nothing changes in the background
        wait_ready_id(client, admin_headers, dataset_id)
    before = row_counts(session)
    for body, status, words in (
        ({"dataset_ids": [*ids, table]}, 422, "not an image"),
        ({"dataset_ids": [*ids, other["id"]]}, 422, "3 measured channel(s)"),
        ({"dataset_ids": [*ids, 987_654]}, 404, "987654"),
        ({"dataset_ids": [ids[0], ids[0]]}, 422, "repeats"),
        ({"dataset_ids": []}, 422, ""),
        ({}, 422, "either dataset_id"),
        ({"dataset_id": ids[0], "dataset_ids": ids}, 422, "either dataset_id"),
    ):
        response = apply(client, admin_headers, fitted_run, body)
        assert response.status_code == status, (body, response.text)
        assert words in response.text
    assert row_counts(session) == before
    nothing = client.get(f"/api/v1/runs/{fitted_run}/applied/masks.zip", headers=admin_headers)
    assert nothing.status_code == 409 and "nothing to export" in nothing.json()["detail"]
    bad_format = client.get(
        f"/api/v1/runs/{fitted_run}/applied/masks.zip",
        params={"format": "gif"},
        headers=admin_headers,
    )
    assert bad_format.status_code == 422


def test_cancelling_a_collection_stops_what_has_not_finished(
    client: TestClient, project_id: int, admin_headers: dict[str, str], fitted_run: int
) -> None:
    ids, _ = collection(client, project_id, admin_headers, 6)
    items = apply(client, admin_headers, fitted_run, {"dataset_ids": ids}).json()["items"]
    cancelled = client.post(
        f"/api/v1/runs/{fitted_run}/applied/cancel", headers=admin_headers
    ).json()["items"]
    assert cancelled, "six applies finished before the cancel: nothing was left to stop"
    assert all(r["cancel_requested"] for r in cancelled)
    # Queued ones stop at once and never start; one already running may still finish.
    stopped = [r["id"] for r in cancelled if r["status"] == "cancelled"]
    assert stopped, [r["status"] for r in cancelled]
    final = {r["id"]: wait(client, admin_headers, r["id"])["status"] for r in items}
    assert all(final[i] == "cancelled" for i in stopped)
    assert set(final.values()) <= {"succeeded", "cancelled"}
