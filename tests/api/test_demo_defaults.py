"""Every demo table runs with every algorithm's defaults and gives a sensible result.

The path is the product's: the Demo project as bootstrap loads it, annotations posted through the
API, a run with ``params: {}``, its stored labels. Methods that need side information get a
little, drawn from the ground truth as a user would give it: 10% of the items labeled (one label
annotation per class), or, for the link-only methods, those items joined by a must-link per class
and a cannot-link between every two classes. C3L needs exactly two categories (or a drawn
boundary), so it gets the same items labeled "first class" or "other".

The floor is per dataset: half of what k-means with the true number of clusters reaches on the
same raw features (iris 0.73, wine 0.37, digits 0.67; scikit-learn KMeans, n_init=10), but at
least 0.2. That is ten times the best of 20 shuffled ground truths (ARI <= 0.022), so clearly
better than chance, and a default that loses more than half of the most naive baseline is not a
sensible result. C3L's two categories cannot split the other classes, so its partition is scored
against the two groups it was given. The coffee picture has no ground truth to score against.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sklearn.metrics import adjusted_rand_score
from sqlalchemy import Engine

from app.config import Settings
from app.jobs.algorithms import ALGORITHMS
from app.jobs.algorithms.base import CANNOT_LINK, LABELS, MUST_LINK
from app.main import create_app
from tests.api.test_runs import run_to_end
from tests.conftest import ADMIN_PASSWORD, _empty_tables, token_headers

pytestmark = pytest.mark.db

FLOORS = {"iris": 0.35, "wine": 0.2, "digits": 0.3}
LABELED_FRACTION = 0.1


@dataclass
class Demo:
    client: TestClient
    headers: dict[str, str]
    datasets: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def demo(db_engine: Engine, database_url: str) -> Iterator[Demo]:
    _empty_tables(db_engine)
    settings = Settings(
        database_url=database_url,
        admin_username="admin",
        admin_password=ADMIN_PASSWORD,
        migrate_on_start=False,
    )
    with TestClient(create_app(settings)) as client:
        headers = token_headers(client, "admin", ADMIN_PASSWORD)
        project = client.get("/api/v1/projects", headers=headers).json()["items"][0]
        datasets = client.get(f"/api/v1/projects/{project['id']}/datasets", headers=headers).json()[
            "items"
        ]
        yield Demo(client, headers, {d["name"]: d for d in datasets})
    _empty_tables(db_engine)


def _truth(demo: Demo, dataset_id: int) -> np.ndarray:
    response = demo.client.get(f"/api/v1/datasets/{dataset_id}/ground-truth", headers=demo.headers)
    assert response.status_code == 200, response.text
    return np.frombuffer(response.content, dtype="<i4")


def _sample(truth: np.ndarray) -> dict[int, list[int]]:
    """10% of the items, drawn at random, grouped by their class."""
    rng = np.random.default_rng(0)
    chosen = rng.choice(truth.shape[0], round(LABELED_FRACTION * truth.shape[0]), replace=False)
    return {int(c): sorted(int(i) for i in chosen if truth[i] == c) for c in np.unique(truth)}


def _annotate(
    demo: Demo, dataset_id: int, algorithm: str, truth: np.ndarray
) -> tuple[np.ndarray, int]:
    """Post the side information a user would give this algorithm; returns the truth to score
    against (two groups for C3L)."""
    uses = set(ALGORITHMS[algorithm].uses)
    by_class = _sample(truth)
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    annotations: list[dict[str, Any]] = []
    if algorithm == "c3l":
        first = min(by_class)
        for name, items in (("first class", by_class[first]), ("other", [])):
            if name == "other":
                items = sorted(i for c, group in by_class.items() if c != first for i in group)
            annotations.append({"kind": "label", "items": items, "label": name})
        truth = (truth != first).astype(int)
    elif LABELS in uses:
        for c, items in by_class.items():
            annotations.append({"kind": "label", "items": items, "label": f"class {c}"})
    elif {MUST_LINK, CANNOT_LINK} & uses:
        classes = sorted(by_class)
        for c in classes:
            annotations.append({"kind": "must_link", "items": by_class[c]})
        for a_pos, a in enumerate(classes):
            for b in classes[a_pos + 1 :]:
                annotations.append(
                    {"kind": "cannot_link", "items_a": by_class[a], "items_b": by_class[b]}
                )
    for body in annotations:
        response = demo.client.post(url, json=body, headers=demo.headers)
        assert response.status_code == 201, response.text
    return truth, len(annotations)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("name", sorted(FLOORS))
def test_defaults_give_a_sensible_partition(demo: Demo, name: str, algorithm: str) -> None:
    dataset_id = demo.datasets[name]["id"]
    truth, n_annotations = _annotate(demo, dataset_id, algorithm, _truth(demo, dataset_id))
    try:
        run = run_to_end(demo.client, demo.headers, dataset_id, algorithm)
    finally:
        for _ in range(n_annotations):  # the next algorithm starts from a clean slate
            demo.client.post(
                f"/api/v1/datasets/{dataset_id}/annotations/undo", headers=demo.headers
            )
    assert run["status"] == "succeeded", run["error"]
    result = demo.client.get(f"/api/v1/runs/{run['id']}/result", headers=demo.headers).json()
    labels = np.asarray(result["labels"])
    ari = adjusted_rand_score(truth, labels)
    print(f"{name} {algorithm}: ARI {ari:.3f}, {len(np.unique(labels))} clusters")
    assert ari > FLOORS[name]
