"""Runs end to end through the API: annotate, compile, run each algorithm, poll, read results,
cancel, failures, restart recovery, concurrency, and frozen side information."""

import io
import json
import time
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.datasets import load_iris, make_blobs
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Run
from app.main import create_app
from app.store.run_side_information import thaw
from tests.conftest import ADMIN_PASSWORD, admin_project, row_counts, token_headers

pytestmark = pytest.mark.db

TERMINAL = {"succeeded", "failed", "cancelled"}


def upload_csv(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    x: np.ndarray,
    y: np.ndarray | None = None,
    name: str = "data",
) -> int:
    columns = [f"f{j}" for j in range(x.shape[1])] + (["class"] if y is not None else [])
    lines = [",".join(columns)]
    for i, row in enumerate(x):
        cells = [repr(float(v)) for v in row] + ([f"c{y[i]}"] if y is not None else [])
        lines.append(",".join(cells))
    response = client.post(
        f"/api/v1/projects/{project_id}/datasets",
        files={"file": (f"{name}.csv", "\n".join(lines).encode(), "text/csv")},
        data={"ground_truth_column": "class"} if y is not None else {},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def start(
    client: TestClient, headers: dict[str, str], dataset_id: int, algorithm: str, **params: object
):  # type: ignore[no-untyped-def]
    return client.post(
        "/api/v1/runs",
        json={"dataset_id": dataset_id, "algorithm": algorithm, "params": params},
        headers=headers,
    )


def wait(
    client: TestClient,
    headers: dict[str, str],
    run_id: int,
    until: set[str] = TERMINAL,
    timeout: float = 180,
) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while True:
        run = client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
        if run["status"] in until:
            return run  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run['status']}"
        time.sleep(0.05)


def run_to_end(
    client: TestClient, headers: dict[str, str], dataset_id: int, algorithm: str, **params: object
) -> dict:  # type: ignore[type-arg]
    """Start a run and wait for its end."""
    return wait(
        client, headers, start(client, headers, dataset_id, algorithm, **params).json()["id"]
    )


def run_succeeded(
    client: TestClient, headers: dict[str, str], dataset_id: int, algorithm: str, **params: object
) -> dict:  # type: ignore[type-arg]
    """Start a run (202) and wait for it to succeed."""
    response = start(client, headers, dataset_id, algorithm, **params)
    assert response.status_code == 202, response.text
    run = wait(client, headers, response.json()["id"])
    assert run["status"] == "succeeded", run
    return run


def test_algorithms_are_listed_with_parameter_schemas(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    page = client.get("/api/v1/algorithms", headers=admin_headers).json()
    by_id = {a["id"]: a for a in page["items"]}
    assert {"cec", "cec-ib", "smic"} <= set(by_id)
    beta = by_id["cec-ib"]["parameters"]["properties"]["beta"]
    assert beta["minimum"] == 0 and beta["default"] == 1.0
    assert by_id["cec-ib"]["uses"] == ["labels"]
    assert "y" in by_id["cec-ib"]["side_information_mapping"]
    assert set(by_id["smic"]["uses"]) == {"must_link", "cannot_link"}


def test_cec_ib_end_to_end_with_labels(
    client: TestClient, admin_headers: dict[str, str], iris_id: int
) -> None:
    y = load_iris().target
    labeled = np.random.default_rng(0).choice(150, size=30, replace=False)
    for cls in range(3):
        items = [int(i) for i in labeled if y[i] == cls]
        client.post(
            f"/api/v1/datasets/{iris_id}/annotations",
            headers=admin_headers,
            json={"kind": "label", "items": items, "label": f"c{cls}"},
        )
    response = start(client, admin_headers, iris_id, "cec-ib", n_clusters=6, n_init=3, beta=1.0)
    assert response.status_code == 202, response.text
    queued = response.json()
    assert queued["status"] in ("queued", "running")
    assert queued["annotation_revision"] == 3
    run = wait(client, admin_headers, queued["id"])
    assert run["status"] == "succeeded", run["error"]
    assert run["progress_iteration"] is not None and run["finished_at"] is not None

    result = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()
    labels = np.array(result["labels"])
    assert labels.shape == (150,)
    metrics = result["metrics"]
    assert metrics["ari"] > 0.5 and metrics["nmi"] > 0.6
    assert metrics["label_purity"] > 0.9
    assert sum(metrics["cluster_sizes"]) == 150
    history = [c for c in result["cost_history"] if c is not None]
    # The energy kept is the best restart's final energy: the lowest cost reported.
    assert result["cluster_params"]["energy"] == pytest.approx(min(history), rel=1e-9)
    assert metrics["timings"]["fit_s"] > 0

    npy = client.get(
        f"/api/v1/runs/{run['id']}/result", params={"format": "npy"}, headers=admin_headers
    )
    np.testing.assert_array_equal(np.load(io.BytesIO(npy.content)), labels)
    csv = client.get(
        f"/api/v1/runs/{run['id']}/result", params={"format": "csv"}, headers=admin_headers
    ).text.splitlines()
    assert csv[0] == "item,id,cluster"
    assert csv[5] == f"4,4,{labels[4]}"
    listed = client.get(f"/api/v1/datasets/{iris_id}/runs", headers=admin_headers).json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == run["id"]


@pytest.mark.parametrize(
    ("algorithm", "params"),
    [
        ("cec", {"n_clusters": 4, "n_init": 2}),
        ("cec-ib", {"n_clusters": 4, "n_init": 2, "beta": 0.5}),
        ("smic", {"n_clusters": 3, "n_neighbors": "auto"}),
        ("ppc", {"n_components": 3}),
        ("c4s", {"n_clusters": 3, "n_init": 2}),
        ("c4s", {"n_clusters": 3, "n_init": 2, "covariance": "tied_spherical"}),
    ],
)
def test_each_algorithm_runs_and_finds_the_blobs(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    algorithm: str,
    params: dict[str, object],
) -> None:
    x, y = make_blobs(n_samples=300, centers=3, cluster_std=0.6, random_state=3)
    dataset_id = upload_csv(client, project_id, admin_headers, x, y)
    client.post(
        f"/api/v1/datasets/{dataset_id}/annotations",
        headers=admin_headers,
        json={"kind": "must_link", "items": [int(i) for i in np.flatnonzero(y == 0)[:5]]},
    )
    run = run_to_end(client, admin_headers, dataset_id, algorithm, **params)
    assert run["status"] == "succeeded", run["error"]
    metrics = client.get(f"/api/v1/runs/{run['id']}/result", headers=admin_headers).json()[
        "metrics"
    ]
    assert metrics["ari"] > 0.9
    assert metrics["pair_constraints"]["must_link"] == 1.0
    assert isinstance(metrics["warnings"], list)


def test_server_sent_events_stream_progress_to_the_end(
    client: TestClient, admin_headers: dict[str, str], iris_id: int
) -> None:
    run_id = start(client, admin_headers, iris_id, "cec", n_clusters=3, n_init=2).json()["id"]
    events = []
    with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=admin_headers) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
    assert events[-1]["status"] == "succeeded"
    assert all(e["id"] == run_id for e in events)


@pytest.fixture
def big_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    x, _ = make_blobs(n_samples=6000, centers=30, n_features=6, random_state=0)
    return upload_csv(client, project_id, admin_headers, x, name="big")


LONG = {"n_clusters": 60, "n_init": 100, "max_iter": 1000, "min_cluster_fraction": 0.0}


def test_cancel_a_long_run(client: TestClient, admin_headers: dict[str, str], big_id: int) -> None:
    run_id = start(client, admin_headers, big_id, "cec", **LONG).json()["id"]
    wait(client, admin_headers, run_id, until={"running"} | TERMINAL)
    response = client.post(f"/api/v1/runs/{run_id}/cancel", headers=admin_headers)
    assert response.status_code == 200
    assert response.json()["cancel_requested"] is True
    run = wait(client, admin_headers, run_id, timeout=60)
    assert run["status"] == "cancelled"
    again = client.post(f"/api/v1/runs/{run_id}/cancel", headers=admin_headers)
    assert again.status_code == 409
    assert "already finished (cancelled)" in again.json()["detail"]
    no_result = client.get(f"/api/v1/runs/{run_id}/result", headers=admin_headers)
    assert no_result.status_code == 409


def test_editing_annotations_during_a_run_does_not_change_its_revision(
    client: TestClient, admin_headers: dict[str, str], big_id: int, session: Session
) -> None:
    url = f"/api/v1/datasets/{big_id}/annotations"
    client.post(url, json={"kind": "label", "items": [0, 1], "label": "A"}, headers=admin_headers)
    run_id = start(client, admin_headers, big_id, "cec-ib", **LONG).json()["id"]
    client.post(
        url, json={"kind": "label", "items": [2, 3, 4], "label": "B"}, headers=admin_headers
    )
    client.post(f"{url}/undo", headers=admin_headers)
    client.post(f"{url}/undo", headers=admin_headers)
    run = client.get(f"/api/v1/runs/{run_id}", headers=admin_headers).json()
    assert run["annotation_revision"] == 1
    stored = session.get(Run, run_id)
    assert stored is not None and stored.side_information_hash is not None
    frozen = thaw(session=session, run=stored)
    assert frozen.revision == 1 and frozen.n_labeled == 2 and frozen.label_names == ["A"]
    client.post(f"/api/v1/runs/{run_id}/cancel", headers=admin_headers)
    wait(client, admin_headers, run_id, timeout=60)


def test_two_concurrent_runs_both_finish(
    client: TestClient, admin_headers: dict[str, str], iris_id: int
) -> None:
    first = start(client, admin_headers, iris_id, "cec", n_clusters=3, n_init=5).json()
    second = start(client, admin_headers, iris_id, "cec", n_clusters=4, n_init=5).json()
    done = [wait(client, admin_headers, r["id"]) for r in (first, second)]
    assert [r["status"] for r in done] == ["succeeded", "succeeded"]


def test_a_run_whose_engine_raises_fails_with_a_readable_error(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    # Three items that must all be apart cannot be split into two components: only the fit
    # finds that out (parameters the data refuses are refused at POST instead).
    dataset_id = upload_csv(client, project_id, admin_headers, np.arange(12.0).reshape(6, 2))
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    for a, b in ([0], [1, 2]), ([1], [2]):
        link = {"kind": "cannot_link", "items_a": a, "items_b": b}
        assert client.post(url, json=link, headers=admin_headers).status_code == 201
    run = run_to_end(client, admin_headers, dataset_id, "ppc", n_components=2)
    assert run["status"] == "failed"
    assert run["error"].startswith("ValueError: ")
    assert "increase n_components" in run["error"]


def test_restart_marks_running_runs_interrupted_and_resumes_queued_ones(
    db_engine: Engine,
    settings: Settings,
    client: TestClient,
    admin_headers: dict[str, str],
    iris_id: int,
    session: Session,
) -> None:
    queued = start(client, admin_headers, iris_id, "cec", n_clusters=3, n_init=1).json()
    wait(client, admin_headers, queued["id"])
    # Simulate a crash: one run left running, one left queued, then a fresh server process.
    template = session.get(Run, queued["id"])
    assert template is not None
    crashed, waiting = (
        Run(
            dataset_id=iris_id,
            algorithm="cec",
            params=template.params,
            annotation_revision=0,
            status=status,
            side_information_hash=template.side_information_hash,
        )
        for status in ("running", "queued")
    )
    session.add_all([crashed, waiting])
    session.commit()
    with TestClient(create_app(settings)) as restarted:
        headers = token_headers(restarted, "admin", ADMIN_PASSWORD)
        failed = restarted.get(f"/api/v1/runs/{crashed.id}", headers=headers).json()
        assert failed["status"] == "failed"
        assert failed["error"].startswith("interrupted")
        resumed = wait(restarted, headers, waiting.id)
        assert resumed["status"] == "succeeded"


BAD_RUNS = {
    "unknown algorithm": ({"algorithm": "kmeans"}, 422, ["unknown algorithm 'kmeans'", "cec-ib"]),
    "parameter out of range": (
        {"algorithm": "cec-ib", "params": {"beta": -1}},
        422,
        ["params.beta"],
    ),
    "unknown parameter": ({"algorithm": "cec", "params": {"colour": 1}}, 422, ["params.colour"]),
    "more clusters than items": (
        {"algorithm": "cec", "params": {"n_clusters": 151}},
        422,
        ["params.n_clusters", "150"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_run_requests_get_4xx_and_write_nothing(
    client: TestClient, admin_headers: dict[str, str], iris_id: int, session: Session, case: str
) -> None:
    body, status, words = BAD_RUNS[case]
    before = row_counts(session)
    response = client.post(
        "/api/v1/runs", json={"dataset_id": iris_id, **body}, headers=admin_headers
    )
    assert response.status_code == status, response.text
    for word in words:
        assert word in response.json()["detail"]
    assert row_counts(session) == before


def test_a_run_on_conflicting_hard_constraints_is_refused_with_the_report(
    client: TestClient, admin_headers: dict[str, str], iris_id: int, session: Session
) -> None:
    url = f"/api/v1/datasets/{iris_id}/annotations"
    a = client.post(
        url, json={"kind": "label", "items": [0, 1], "label": "A"}, headers=admin_headers
    ).json()
    b = client.post(
        url, json={"kind": "label", "items": [1], "label": "B"}, headers=admin_headers
    ).json()
    before = row_counts(session)
    response = start(client, admin_headers, iris_id, "cec-ib", n_clusters=3)
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "conflict"
    assert body["conflicts"][0]["kind"] == "two_labels"
    assert body["conflicts"][0]["annotation_ids"] == [a["id"], b["id"]]
    assert row_counts(session) == before
    # CEC uses no labels, so the same annotations do not stop it.
    assert start(client, admin_headers, iris_id, "cec", n_clusters=3).status_code == 202


def test_another_projects_dataset_is_404_not_403(
    client: TestClient, admin_headers: dict[str, str], iris_id: int, make_user
) -> None:
    outsider = make_user("outsider")
    response = start(client, outsider, iris_id, "cec")
    assert response.status_code == 404
    run_id = start(client, admin_headers, iris_id, "cec", n_clusters=3).json()["id"]
    assert client.get(f"/api/v1/runs/{run_id}", headers=outsider).status_code == 404
    assert client.post(f"/api/v1/runs/{run_id}/cancel", headers=outsider).status_code == 404
    wait(client, admin_headers, run_id)


def test_c3l_takes_a_boundary_or_two_label_categories(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    x, y = make_blobs(
        n_samples=300, centers=[[0, 0], [6, 0], [0, 6]], cluster_std=0.7, random_state=1
    )
    dataset_id = upload_csv(client, project_id, admin_headers, x, y)
    refused = start(client, admin_headers, dataset_id, "c3l", n_clusters=4)
    assert refused.status_code == 422
    assert "C3L needs a drawn boundary" in refused.json()["detail"]
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    for cls, name in ((0, "near"), (1, "far")):
        items = [int(i) for i in np.flatnonzero(y == cls)[:10]]
        client.post(
            url, json={"kind": "label", "items": items, "label": name}, headers=admin_headers
        )
    learned = run_to_end(client, admin_headers, dataset_id, "c3l", n_clusters=4, n_init=2)
    assert learned["status"] == "succeeded", learned["error"]
    views = client.get(f"/api/v1/datasets/{dataset_id}/views", headers=admin_headers).json()
    feature_view = client.post(
        f"/api/v1/datasets/{dataset_id}/views", json={"x": "f0", "y": "f1"}, headers=admin_headers
    ).json()
    assert views["total"] == 1
    client.post(
        url,
        headers=admin_headers,
        json={
            "kind": "boundary",
            "view_id": feature_view["id"],
            "points": [[3, -5], [3, 10]],
            "labels": ["west", "east"],
        },
    )
    drawn = run_to_end(client, admin_headers, dataset_id, "c3l", n_clusters=4, n_init=2)
    assert drawn["status"] == "succeeded", drawn["error"]
    result = client.get(f"/api/v1/runs/{drawn['id']}/result", headers=admin_headers).json()
    labels = np.array(result["labels"])
    east = x[:, 0] > 3
    # Clusters respect the boundary: each cluster lies (almost) on one side of x = 3.
    for cluster in np.unique(labels):
        share = east[labels == cluster].mean()
        assert share < 0.1 or share > 0.9


@pytest.fixture
def dask_client(db_engine: Engine, settings: Settings) -> Iterator[TestClient]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
    ) as cluster:
        dask_settings = settings.model_copy(
            update={"jobs_executor": "dask", "dask_scheduler": cluster.scheduler_address}
        )
        with TestClient(create_app(dask_settings)) as test_client:
            yield test_client


def test_dask_executor_runs_on_a_local_cluster(dask_client: TestClient) -> None:
    headers, project_id = admin_project(dask_client, "D")
    iris = load_iris()
    dataset_id = upload_csv(dask_client, project_id, headers, iris.data, iris.target)
    run_id = start(dask_client, headers, dataset_id, "cec", n_clusters=3, n_init=2).json()["id"]
    run = wait(dask_client, headers, run_id, timeout=240)
    assert run["status"] == "succeeded", run["error"]
    result = dask_client.get(f"/api/v1/runs/{run_id}/result", headers=headers).json()
    assert result["metrics"]["ari"] > 0.4
