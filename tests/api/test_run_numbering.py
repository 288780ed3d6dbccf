"""A fitted run numbers its clusters after the dataset's latest finished run, so a re-run keeps
each group's number (its colour in the workspace); a run applying a model keeps the model's."""

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import make_blobs
from sqlalchemy.orm import Session

from app.db.models import RunResult
from app.store.run_arrays import write_labels
from tests.api.test_image_sessions import HEIGHT, WIDTH
from tests.api.test_runs import run_succeeded, run_to_end, upload_csv, wait

pytestmark = pytest.mark.db

SHUFFLE = np.array([2, 0, 1])  # stored number of the engine's cluster c in the earlier run


def result(client: TestClient, headers: dict[str, str], run_id: int) -> dict:
    response = client.get(f"/api/v1/runs/{run_id}/result", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def store_labels(session: Session, run_id: int, labels: np.ndarray) -> None:
    """Rewrite a finished run's labels: an earlier run that happened to number differently."""
    assert session.get(RunResult, run_id) is not None
    write_labels(session=session, run_id=run_id, labels=labels)
    session.commit()


def test_a_rerun_follows_the_previous_runs_numbers(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    x, y = make_blobs(n_samples=240, centers=3, cluster_std=0.7, random_state=5)
    dataset_id = upload_csv(client, project_id, admin_headers, x, y)
    first = run_to_end(client, admin_headers, dataset_id, "ppc", n_components=3, random_state=0)
    assert first["status"] == "succeeded", first["error"]
    fresh = np.asarray(result(client, admin_headers, first["id"])["labels"])
    assert "numbered_like_run" not in result(client, admin_headers, first["id"])["metrics"]
    earlier = SHUFFLE[fresh]
    store_labels(session, first["id"], earlier)

    again = run_to_end(client, admin_headers, dataset_id, "ppc", n_components=3, random_state=0)
    assert again["status"] == "succeeded", again["error"]
    body = result(client, admin_headers, again["id"])
    labels = np.asarray(body["labels"])
    # The same fit, stored under the earlier run's numbers, not the engine's.
    np.testing.assert_array_equal(labels, earlier)
    assert body["metrics"]["numbered_like_run"] == first["id"]
    assert body["metrics"]["cluster_order"] == SHUFFLE.tolist()
    # Per-cluster parameters moved with their clusters: mean c is the centre of cluster c.
    means = np.asarray(body["cluster_params"]["means"])
    centres = np.array([x[labels == c].mean(axis=0) for c in range(3)])
    nearest = np.linalg.norm(means[:, None, :] - centres[None], axis=2).argmin(axis=1)
    np.testing.assert_array_equal(nearest, [0, 1, 2])
    assert body["metrics"]["cluster_sizes"] == np.bincount(labels, minlength=3).tolist()
    csv = client.get(f"/api/v1/runs/{again['id']}/result.csv", headers=admin_headers).text
    assert [int(r.split(",")[2]) for r in csv.strip().splitlines()[1:]] == labels.tolist()


def test_fewer_clusters_keep_the_numbers_of_the_groups_they_continue(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    # Three blobs, two of them close: two clusters continue the far blob and the merged pair.
    centres = np.array([[0.0, 0.0], [0.0, 2.5], [12.0, 0.0]])
    x, y = make_blobs(n_samples=300, centers=centres, cluster_std=0.5, random_state=1)
    dataset_id = upload_csv(client, project_id, admin_headers, x, y)
    first = run_to_end(client, admin_headers, dataset_id, "ppc", n_components=3, random_state=0)
    assert first["status"] == "succeeded", first["error"]
    earlier = np.where(y == 2, 0, np.where(y == 0, 2, 1))  # far blob 0, close pair 1 and 2
    store_labels(session, first["id"], earlier)
    two = run_to_end(client, admin_headers, dataset_id, "ppc", n_components=2, random_state=0)
    labels = np.asarray(result(client, admin_headers, two["id"])["labels"])
    assert sorted(set(labels.tolist())) == [0, 1]
    assert np.all(labels[y == 2] == 0)  # the far blob keeps number 0
    assert np.all(labels[y != 2] == 1)  # the pair continues the larger share of number 1


def test_an_applied_model_keeps_the_numbers_its_run_stored(
    client: TestClient, admin_headers: dict[str, str], image_id: int, session: Session
) -> None:
    first = run_succeeded(client, admin_headers, image_id, "cec-ib")
    fresh = np.asarray(result(client, admin_headers, first["id"])["labels"])
    store_labels(session, first["id"], 1 - fresh)  # the earlier run numbered the other way
    source = run_succeeded(client, admin_headers, image_id, "cec-ib")
    source_body = result(client, admin_headers, source["id"])
    assert source_body["metrics"]["cluster_order"] == [1, 0]
    applied = client.post(
        f"/api/v1/runs/{source['id']}/apply",
        json={"dataset_id": image_id},
        headers=admin_headers,
    )
    assert applied.status_code == 202, applied.text
    done = wait(client, admin_headers, applied.json()["id"])
    assert done["status"] == "succeeded", done
    body = result(client, admin_headers, done["id"])
    labels = np.asarray(body["labels"]).reshape(HEIGHT, WIDTH)
    names = source_body["cluster_labels"]
    assert body["cluster_labels"] == names
    # The model's own numbers would put "background" at the disc's centre.
    assert names[labels[48, 42]] == "disc" and names[labels[4, 120]] == "background"
    # An applied run follows its model, not the dataset's latest run.
    assert "numbered_like_run" not in body["metrics"]
    assert np.mean(labels.ravel() == np.asarray(source_body["labels"])) > 0.95
