"""A Python client generated from the published `/openapi.json` with openapi-python-client (a
dev dependency; it runs offline) drives the app as a service would: upload a CSV, annotate by
the dataset's id column, run, and read the result as JSON, CSV and NPY. The client's httpx
client is the app's TestClient, so requests go in process."""

import importlib
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.config import Settings
from app.main import create_app
from tests.conftest import run_tool

pytestmark = pytest.mark.db

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "workbench_client"
# NPY, PNG and Deep Zoom's XML have no standard media type the generator knows: read them as
# bytes, the generator's documented override (docs/api.md, "Generated clients").
GENERATE_ARGS = ["--path", "openapi.json", "--config", "config.yml", "--meta", "none"]
GENERATE_ARGS += ["--output-path", PACKAGE]
CONFIG = f"""\
project_name_override: workbench-client
package_name_override: {PACKAGE}
post_hooks: []
content_type_overrides:
  application/x-npy: application/octet-stream
  image/png: application/octet-stream
  image/jpeg: application/octet-stream
  image/tiff: application/octet-stream
  application/zip: application/octet-stream
  application/xml: application/octet-stream
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    if not GENERATOR.exists():
        pytest.skip("openapi-python-client is not installed (a dev dependency)")
    root = tmp_path_factory.mktemp("client")
    app = create_app(
        Settings(database_url="sqlite://", migrate_on_start=False, load_demo_data=False)
    )
    (root / "openapi.json").write_text(json.dumps(app.openapi()))
    (root / "config.yml").write_text(CONFIG)
    printed = run_tool([str(GENERATOR), "generate", *GENERATE_ARGS], root, timeout=120)
    # Every operation and response made it into the client (the generator warns otherwise).
    assert "WARNING" not in printed, printed
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _op(module: ModuleType, tag: str, name: str) -> Any:
    return importlib.import_module(f"{module.__name__}.api.{tag}.{name}")


def _model(module: ModuleType, name: str) -> Any:
    return getattr(importlib.import_module(f"{module.__name__}.models"), name)


def test_a_generated_client_uploads_annotates_runs_and_reads_results(
    generated: ModuleType, client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    client.headers.update(admin_headers)
    api = generated.AuthenticatedClient(base_url=str(client.base_url), token="in-headers")
    api.set_httpx_client(client)
    types = importlib.import_module(f"{PACKAGE}.types")

    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.3, (15, 2)), rng.normal(5, 0.3, (15, 2))])
    rows = [f"s{k},{a:.4f},{b:.4f}" for k, (a, b) in enumerate(x)]
    csv = "\n".join(["sample,a,b", *rows]).encode()
    upload = _model(generated, "BodyDatasetsUpload")(
        file=types.File(payload=io.BytesIO(csv), file_name="blobs.csv", mime_type="text/csv"),
        id_column="sample",
    )
    dataset = _op(generated, "datasets", "datasets_upload").sync(
        project_id=project_id, client=api, body=upload
    )
    assert dataset.n_items == 30 and dataset.status.value == "ready"

    # Items named by the id column, as a service that keeps its own ids would.
    create = _op(generated, "annotations", "annotations_create")
    label = create.sync(
        dataset_id=dataset.id,
        client=api,
        body=_model(generated, "LabelCreateByItemIds")(
            kind="label", item_ids=["s0", "s1"], label="left"
        ),
    )
    assert label.kind.value == "label" and label.payload["items"] == [0, 1]
    refused = create.sync_detailed(
        dataset_id=dataset.id,
        client=api,
        body=_model(generated, "LabelCreateByItemIds")(
            kind="label", item_ids=["s0", "nope"], label="left"
        ),
    )
    assert refused.status_code == 422
    assert refused.parsed.code == "invalid_input" and "'nope'" in refused.parsed.detail

    params = _model(generated, "RunCreateParams").from_dict({"n_clusters": 2, "n_init": 2})
    cec = _model(generated, "RunCreateAlgorithm")("cec")  # the published enum, as a type
    run = _op(generated, "runs", "runs_create").sync(
        client=api,
        body=_model(generated, "RunCreate")(dataset_id=dataset.id, algorithm=cec, params=params),
    )
    deadline = time.monotonic() + 60
    while run.status.value in ("queued", "running"):
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.05)
        run = _op(generated, "runs", "runs_get").sync(run_id=run.id, client=api)
    assert run.status.value == "succeeded", run.error

    result = _op(generated, "runs", "runs_result").sync(run_id=run.id, client=api)
    labels = np.asarray(result.labels)
    assert len(set(labels[:15])) == 1 and len(set(labels[15:])) == 1  # the two blobs
    assert labels[0] != labels[15]

    text = _op(generated, "runs", "runs_result_csv").sync(run_id=run.id, client=api)
    lines = text.strip().splitlines()
    assert lines[0] == "item,id,cluster" and lines[16] == f"15,s15,{labels[15]}"

    npy = _op(generated, "runs", "runs_result_npy").sync(run_id=run.id, client=api)
    np.testing.assert_array_equal(np.load(io.BytesIO(npy.payload.read())), labels)

    page = _op(generated, "projects", "members_list").sync(
        project_id=project_id, client=api, limit=1, offset=0
    )
    assert page.total == 1 and page.limit == 1 and page.items[0].role.value == "owner"


def _annotate(generated: ModuleType, api: Any, dataset_id: int, model: str, **fields: Any) -> Any:
    created = _op(generated, "annotations", "annotations_create").sync_detailed(
        dataset_id=dataset_id, client=api, body=_model(generated, model)(**fields)
    )
    assert created.status_code == 201, (model, created.content)
    return created.parsed


def test_a_generated_client_has_a_model_for_every_kind_of_annotation(
    generated: ModuleType, client: TestClient, admin_headers: dict[str, str], project_id: int
) -> None:
    """Every way to write an annotation is a typed model of the client (none left as a bare
    dict), and each one is accepted: on a table by position and by id, on an image by strokes."""
    client.headers.update(admin_headers)
    api = generated.AuthenticatedClient(base_url=str(client.base_url), token="in-headers")
    api.set_httpx_client(client)
    types = importlib.import_module(f"{PACKAGE}.types")
    upload = _op(generated, "datasets", "datasets_upload")

    rows = [f"s{k},{k % 5}.5,{k // 5}.25" for k in range(20)]
    csv = "\n".join(["sample,a,b", *rows]).encode()
    table = upload.sync(
        project_id=project_id,
        client=api,
        body=_model(generated, "BodyDatasetsUpload")(
            file=types.File(payload=io.BytesIO(csv), file_name="t.csv", mime_type="text/csv"),
            id_column="sample",
        ),
    )
    on_table = [
        ("LabelCreateByItems", {"kind": "label", "items": [0], "label": "A"}),
        ("LabelCreateByItemIds", {"kind": "label", "item_ids": ["s1"], "label": "B"}),
        ("MustLinkCreateByItems", {"kind": "must_link", "items": [2, 3]}),
        ("MustLinkCreateByItemIds", {"kind": "must_link", "item_ids": ["s4", "s5"]}),
        ("CannotLinkCreateByItems", {"kind": "cannot_link", "items_a": [6], "items_b": [7]}),
        (
            "CannotLinkCreateByItemIds",
            {"kind": "cannot_link", "item_ids_a": ["s8"], "item_ids_b": ["s9"]},
        ),
    ]
    for model, fields in on_table:
        assert _annotate(generated, api, table.id, model, **fields).kind.value == fields["kind"]
    views = _op(generated, "views", "views_list").sync(dataset_id=table.id, client=api)
    boundary = _annotate(
        generated,
        api,
        table.id,
        "BoundaryCreate",
        kind="boundary",
        view_id=views.items[0].id,
        points=[[0.0, -9.0], [0.0, 9.0]],
        labels=["left", "right"],
    )
    assert boundary.kind.value == "boundary"

    pixels = np.random.default_rng(1).integers(0, 256, (24, 24, 3), dtype=np.uint8)
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    image = upload.sync(
        project_id=project_id,
        client=api,
        body=_model(generated, "BodyDatasetsUpload")(
            file=types.File(
                payload=io.BytesIO(png.getvalue()), file_name="p.png", mime_type="image/png"
            )
        ),
    )
    deadline = time.monotonic() + 120
    while image.status.value == "featurizing":
        assert time.monotonic() < deadline, "the image was not featurized"
        time.sleep(0.1)
        image = _op(generated, "datasets", "datasets_get").sync(dataset_id=image.id, client=api)
    assert image.status.value == "ready"
    stroke = _model(generated, "Stroke")
    left = [stroke(points=[[2.0, 2.0], [6.0, 2.0]], radius=1.5)]
    right = [stroke(points=[[20.0, 20.0]], radius=2.0)]
    on_image = [
        ("ScribbleCreateByLabel", {"kind": "scribble", "strokes": left, "label": "sky"}),
        ("ScribbleCreateByErase", {"kind": "scribble", "strokes": right, "erase": True}),
        ("MustLinkCreateByStrokes", {"kind": "must_link", "strokes": left + right}),
        (
            "CannotLinkCreateByStrokes",
            {"kind": "cannot_link", "strokes_a": left, "strokes_b": right},
        ),
    ]
    for model, fields in on_image:
        assert _annotate(generated, api, image.id, model, **fields).kind.value == fields["kind"]
