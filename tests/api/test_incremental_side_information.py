"""The side information a run compiles is kept between runs and brought up to date act by act:
after every act, undo, redo, delete and edit it equals a compilation from nothing, and an act
reads only its own annotations from the database."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.services import annotations, side_information
from tests.conftest import upload_npy

pytestmark = pytest.mark.db

N_ITEMS = 30


@pytest.fixture
def dataset_id(client: TestClient, project_id: int, admin_headers: dict[str, str]) -> int:
    features = np.random.default_rng(0).normal(size=(N_ITEMS, 2))
    return upload_npy(client, project_id, admin_headers, features)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many annotations each compilation read from the database."""
    counts: list[int] = []
    real = annotations.records

    def counted(**kwargs):  # type: ignore[no-untyped-def]
        counts.append(len(kwargs["ids"]))
        return real(**kwargs)

    monkeypatch.setattr(annotations, "records", counted)
    return counts


def _side(client: TestClient, dataset_id: int, headers: dict[str, str]) -> dict:  # type: ignore[type-arg]
    response = client.get(f"/api/v1/datasets/{dataset_id}/side-information", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _act(
    client: TestClient, dataset_id: int, headers: dict[str, str], rng: np.random.Generator
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    live = client.get(url, headers=headers).json()["items"]
    move = rng.random()
    if move < 0.15:
        response = client.post(f"{url}/undo", headers=headers)
    elif move < 0.25:
        response = client.post(f"{url}/redo", headers=headers)
    elif move < 0.35 and live:
        response = client.delete(
            f"{url}/{live[int(rng.integers(len(live)))]['id']}", headers=headers
        )
    elif move < 0.45 and any(a["kind"] == "label" for a in live):
        label = next(a for a in reversed(live) if a["kind"] == "label")
        body = {"label": str(rng.choice(["a", "b", "c"]))}
        response = client.patch(f"{url}/{label['id']}", json=body, headers=headers)
    else:
        items = sorted(rng.choice(N_ITEMS, size=3, replace=False).tolist())
        kind = str(rng.choice(["label", "must_link", "cannot_link"]))
        if kind == "label":
            body = {"kind": kind, "items": items, "label": str(rng.choice(["a", "b", "c"]))}
        elif kind == "must_link":
            body = {"kind": kind, "items": items[:2]}
        else:
            body = {"kind": kind, "items_a": items[:1], "items_b": items[1:]}
        response = client.post(url, json=body, headers=headers)
    assert response.status_code in (200, 201, 409), response.text  # 409: nothing to undo/redo


def test_kept_compilation_follows_every_kind_of_act(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str]
) -> None:
    rng = np.random.default_rng(3)
    for _ in range(40):
        _act(client, dataset_id, admin_headers, rng)
        kept = _side(client, dataset_id, admin_headers)
        side_information.forget_compiled()
        assert kept == _side(client, dataset_id, admin_headers)


def test_an_act_reads_only_its_own_annotations(
    client: TestClient, dataset_id: int, admin_headers: dict[str, str], reads: list[int]
) -> None:
    url = f"/api/v1/datasets/{dataset_id}/annotations"
    for item in range(12):
        body = {"kind": "label", "items": [item], "label": "ab"[item % 2]}
        assert client.post(url, json=body, headers=admin_headers).status_code == 201
    side_information.forget_compiled()
    assert _side(client, dataset_id, admin_headers)["n_labeled"] == 12
    body = {"kind": "label", "items": [20, 21], "label": "a"}
    assert client.post(url, json=body, headers=admin_headers).status_code == 201
    assert _side(client, dataset_id, admin_headers)["n_labeled"] == 14
    assert client.post(f"{url}/undo", headers=admin_headers).status_code == 200
    assert _side(client, dataset_id, admin_headers)["n_labeled"] == 12
    assert reads == [12, 1, 0]  # all at first, then the act's one, then none for the undo
