"""Schemathesis against the app's own published schema (`/openapi.json`), in process.

Every operation is called with generated requests, valid and invalid (examples, coverage and
fuzzing phases, a fixed seed, a bounded number of examples), then sequences of calls that feed
one response's ids into the next request (the stateful phase). No response may be a 5xx, and
responses must match what the schema says of them: status codes, content types, bodies, the
`Allow` header of a 405, and refusals of what the schema refuses.

The app's lifespan runs on Schemathesis' event loop (it starts the app when it loads the
schema), so progress streams and runs live where the requests are served; the module stops it
and empties the tables when done. Requests are made as the administrator; path ids are half the
time those of a small seeded project (dataset, annotations, view, finished run), so operations
get past "not found" into their real work.
"""

import io
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.openapi.checks import EnsureResourceAvailability, RejectedPositiveData
from schemathesis.python import asgi
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.api.schemas.common import MAX_ID
from app.config import Settings
from app.db.models import Run, User
from app.main import create_app
from app.services import accounts, annotations, datasets, projects, runs, views
from app.services.ingest.table_readers import TableColumns
from app.services.ingest.upload import UploadedFile, UploadLimits
from tests.conftest import ADMIN_PASSWORD, _empty_tables

pytestmark = pytest.mark.db

SEED = 20_261_123
# Examples per operation and phase, and stateful scenarios: the module stays within a few
# minutes on two cores. Raise them by hand for a deeper search.
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "12"))
STATEFUL_EXAMPLES = int(os.environ.get("SCHEMATHESIS_STATEFUL_EXAMPLES", "15"))
STATEFUL_STEPS = 8

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "suppress-health-check": ["too_slow", "filter_too_much", "data_too_large"],
        "generation": {
            "mode": "all",  # valid and invalid requests
            "max-examples": MAX_EXAMPLES,
            "database": "none",
            "deterministic": True,
        },
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": True, "max-steps": STATEFUL_STEPS},
        },
        "request-timeout": 60,
        "max-stream-events": 20,
    }
)


# Path ids of the seeded project, filled in by the `api` fixture before any request is made.
SEEDED: dict[str, int] = {}


def _published_schema() -> dict[str, Any]:
    # Building the app touches no database; the `api` fixture checks that the running app
    # serves this same document at /openapi.json.
    app = create_app(
        Settings(database_url="sqlite://", migrate_on_start=False, load_demo_data=False)
    )
    return app.openapi()


# Logging out would revoke the token every other request is made with.
SCHEMA = schemathesis.openapi.from_dict(_published_schema(), config=CONFIG).exclude(
    path="/api/v1/auth/logout", method="POST"
)


@SCHEMA.hook
def flatmap_path_parameters(
    context: schemathesis.HookContext, path_parameters: dict[str, Any] | None
) -> st.SearchStrategy[dict[str, Any] | None]:
    """Half the time, aim a valid id at the seeded project's (an invalid one stays, so that the
    request stays invalid)."""
    if not path_parameters:
        return st.just(path_parameters)
    seeded = {
        name: SEEDED[name]
        for name, value in path_parameters.items()
        if name in SEEDED and type(value) is int and 1 <= value <= MAX_ID
    }
    return st.sampled_from([path_parameters, {**path_parameters, **seeded}])


def _refused_by_data(response: schemathesis.Response) -> bool:
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("code") == "invalid_input" and "errors" not in body


@SCHEMA.hook
def filter_failure(
    context: schemathesis.HookContext,
    failure: Exception,
    case: schemathesis.Case,
    response: schemathesis.Response,
) -> bool:
    """Three kinds of refusal are right although the schema allows the request:

    - 422 `invalid_input` without `errors` is the server refusing what only the data decides (a
      file that is not a CSV, an item past the dataset's last, a feature name the dataset does
      not have); what the schema can say (an unknown algorithm, a repeated filter) is refused
      by validation, with the `errors` it found, and is still checked;
    - 415 for a file whose bytes are not an image where only images are taken (a collection's
      files): a schema cannot say what a binary's bytes must be;
    - 404 "no user named ..." when adding a member to a project just created is about the user
      (as GitHub and GitLab answer), not about the project; so is 404 "no collection imported
      by reference named ..." when syncing a collection the project does not have.
    """
    if isinstance(failure, RejectedPositiveData):
        if response.status_code == 415:
            return False
        return not (response.status_code == 422 and _refused_by_data(response))
    if isinstance(failure, EnsureResourceAvailability):
        about_another = ("no user named", "no collection imported by reference named")
        return not (
            response.status_code == 404 and any(words in response.text for words in about_another)
        )
    return True


@dataclass
class Api:
    app: Any
    headers: dict[str, str]

    def call_kwargs(self) -> dict[str, Any]:
        return {"app": self.app, "headers": self.headers}


def _seed(settings: Settings, session: Session, executor: Any) -> tuple[str, dict[str, int]]:
    """An access token for the administrator and a small project to aim at."""
    admin = session.scalar(select(User).where(User.username == settings.admin_username))
    assert admin is not None
    _, secret = accounts.issue_token(
        session=session, user=admin, kind="access", name="schemathesis", lifetime=timedelta(hours=2)
    )
    api_token, _ = accounts.issue_token(
        session=session, user=admin, kind="api", name="fuzzed", lifetime=None
    )
    project = projects.create_project(session=session, owner=admin, name="Fuzzed")
    rows = [f"i{k},{k % 3},{k * 0.5 + (k % 3) * 4},{(k * 7) % 5}" for k in range(30)]
    text = "\n".join(["id,class,a,b", *rows]).encode()
    dataset = datasets.import_upload(
        session=session,
        project=project,
        user=admin,
        name="blobs",
        upload=UploadedFile(io.BytesIO(text), "blobs.csv", len(text), "text/csv"),
        limits=UploadLimits.from_settings(settings),
        columns=TableColumns(id_column="id", ground_truth_column="class"),
    )
    view = views.list_views(session=session, dataset=dataset)[0]
    for kind, body in [
        ("label", {"items": [0, 1, 2], "label": "A"}),
        ("must_link", {"items": [3, 4]}),
        ("boundary", {"view_id": view.id, "points": [[0, -9], [0, 9]], "labels": ["L", "R"]}),
    ]:
        annotations.create_annotation(
            session=session, dataset=dataset, user=admin, kind=kind, body=body, confidence=None
        )
    run = runs.start_run(
        session=session,
        dataset=dataset,
        user=admin,
        algorithm_id="cec",
        params={"n_clusters": 2, "n_init": 1},
    )
    session.commit()
    executor.submit(run.id)
    deadline = time.monotonic() + 120
    while session.get(Run, run.id, populate_existing=True).status not in runs.TERMINAL:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the seeded run did not finish"
        time.sleep(0.05)
    ids = {
        "project_id": project.id,
        "dataset_id": dataset.id,
        "view_id": view.id,
        "run_id": run.id,
        "token_id": api_token.id,
    }
    return secret, ids


@pytest.fixture(scope="module")
def api(db_engine: Engine, database_url: str) -> Iterator[Api]:
    settings = Settings(
        database_url=database_url,
        admin_username="admin",
        admin_password=ADMIN_PASSWORD,
        load_demo_data=False,
        migrate_on_start=False,
        chunk_rows=64,
        inline_workers=1,
    )
    app = create_app(settings)
    # Loading the schema from the app starts it (its lifespan) on Schemathesis' event loop,
    # where every request below is served.
    live = schemathesis.openapi.from_asgi("/openapi.json", app, config=CONFIG)
    try:
        assert live.raw_schema == SCHEMA.raw_schema
        with app.state.session_factory() as session:
            secret, ids = _seed(settings, session, app.state.executor)
        SEEDED.update(ids)
        yield Api(app=app, headers={"Authorization": f"Bearer {secret}"})
    finally:
        SEEDED.clear()
        with app.state.session_factory() as session:
            for run in session.scalars(select(Run).where(Run.status.in_(runs.ACTIVE))):
                runs.request_cancel(session=session, run=run)
            session.commit()
        asgi.shutdown_lifespans()  # stops the executor and closes the database engine
        _empty_tables(db_engine)


# Deletes run after every other operation, so that those find the seeded project.
@SCHEMA.exclude(method="DELETE").parametrize()
def test_no_operation_answers_with_a_server_error(case: schemathesis.Case, api: Api) -> None:
    case.call_and_validate(**api.call_kwargs())


@SCHEMA.include(method="DELETE").parametrize()
def test_no_delete_answers_with_a_server_error(case: schemathesis.Case, api: Api) -> None:
    case.call_and_validate(**api.call_kwargs())


def test_no_sequence_of_calls_answers_with_a_server_error(api: Api) -> None:
    class Workflow(SCHEMA.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return api.call_kwargs()

    Workflow.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            phases=[hypothesis.Phase.generate],
        )
    )
