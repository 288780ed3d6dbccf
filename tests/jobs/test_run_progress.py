"""A run's progress never goes back. On an image, `covariance: auto` fits full and diagonal at
once with the run's one progress callback; each reported its own sweep count, and the progress
line read 4 %, 4 %, 6 %, 5 %, 7 %, 6 %. The candidates now report as one fit (each fills its
share of the bar: app/engine/image/coherent_choice.py), and the runner never stores a lower
sweep than the one stored (a second line of defence)."""

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.models import Run
from app.engine.core.cec_fit import ASK_ONLY
from app.engine.image import grid_links
from app.engine.image.coherent_choice import MostCoherentFit
from app.jobs.algorithms.base import Algorithm, ItemStructure, Params
from app.jobs.algorithms.cec import CECParams
from app.jobs.algorithms.registry import get_algorithm
from app.jobs.run import runner
from app.jobs.run.image_runs import image_params
from app.sideinfo import SideInformation
from tests.api.test_image_featurization import two_regions, upload_image, wait_ready
from tests.api.test_runs import run_succeeded, upload_csv

CEC_FAMILY = ["cec", "cec-ib", "c3l", "c4s"]
HEIGHT, WIDTH = 30, 40


def percent(sweep: int, budget: int) -> int:
    """The progress line's share (app/static/js/workspace/run-panel.js, showProgress)."""
    return min(99, math.floor(100 * sweep / budget + 0.5))


def scribbled_image() -> tuple[np.ndarray, SideInformation, ItemStructure]:
    """A noisy left and right half of a small image, a few pixels of each scribbled."""
    rng = np.random.default_rng(0)
    half = (np.indices((HEIGHT, WIDTH))[1] >= WIDTH // 2).astype(int).ravel()
    x = np.stack([half * 2.0, half * 1.0, half * -1.0], axis=1)
    x = x + rng.normal(0, 0.9, (half.size, 3))
    labels = np.full(half.size, -1, dtype=np.int32)
    labels[::23] = half[::23]
    info = SideInformation(n_items=half.size, revision=1, labels=labels, label_names=["a", "b"])
    pairs, weights = grid_links(HEIGHT, WIDTH, 1.0)
    return x, info, ItemStructure(pairs.astype(np.int64), weights.astype(np.float64))


def image_run(
    algorithm_id: str,
) -> tuple[Algorithm, np.ndarray, SideInformation, ItemStructure, Params]:
    """The runner's path up to the plan on `scribbled_image()`: the algorithm, the image's
    features, side information and links, and the image's parameters (6 clusters)."""
    algorithm = get_algorithm(algorithm_id)
    assert algorithm is not None
    x, info, structure = scribbled_image()
    params = image_params(algorithm.params_model.model_validate({"n_clusters": 6}))
    return algorithm, x, info, structure, params


@pytest.mark.parametrize("algorithm_id", CEC_FAMILY)
def test_an_image_run_reports_sweeps_and_percentages_that_never_go_back(
    algorithm_id: str,
) -> None:
    """The runner's path: the image's parameters, the plan with the image's links, the fit."""
    algorithm, x, info, structure, params = image_run(algorithm_id)
    seen: list[int] = []

    def progress(iteration: int, cost: float) -> bool:
        seen.append(iteration)
        return True

    assert isinstance(params, CECParams)
    plan = algorithm.plan(params, info, x, progress, **{"structure": structure})
    assert isinstance(plan.estimator, MostCoherentFit)
    plan.estimator.fit(x, **plan.fit_kwargs)
    assert len(seen) > 2
    assert seen == sorted(seen), "the sweep went back"
    budget = params.max_iter
    shares = [percent(sweep, budget) for sweep in seen]
    assert shares == sorted(shares), "the percentage went back"


def test_cancelling_stops_both_candidates_of_an_image_run() -> None:
    algorithm, x, info, structure, params = image_run("cec-ib")
    calls: list[int] = []

    def cancel_at_second(iteration: int, cost: float) -> bool:
        calls.append(iteration)
        return len(calls) < 2

    plan = algorithm.plan(params, info, x, cancel_at_second, **{"structure": structure})
    plan.estimator.fit(x, **plan.fit_kwargs)
    assert len(calls) == 2  # nobody asks again once told to stop
    assert all(c.n_iter_ <= 2 for c in plan.estimator.candidates)  # each stopped at once


def _running(
    client: TestClient,
    project_id: int,
    headers: dict[str, str],
    session: Session,
    **fields: Any,
) -> Run:
    """A run on a small table, running under the claim "this-worker"."""
    dataset_id = upload_csv(client, project_id, headers, np.arange(12.0).reshape(6, 2))
    run = Run(
        dataset_id=dataset_id,
        algorithm="cec",
        params={},
        annotation_revision=0,
        status="running",
        worker_key="this-worker",
        **fields,
    )
    session.add(run)
    session.commit()
    return run


def _recorder(client: TestClient, run: Run) -> runner.ProgressRecorder:
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    return runner.ProgressRecorder(runner.Claim(factory, run.id, "this-worker", print), None)


@pytest.fixture
def recorded(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> Callable[..., tuple[Run, runner.ProgressRecorder]]:
    """`recorded(**fields)`: a running run (`_running`) and a progress recorder of its claim."""

    def make(**fields: Any) -> tuple[Run, runner.ProgressRecorder]:
        run = _running(client, project_id, admin_headers, session, **fields)
        return run, _recorder(client, run)

    return make


@pytest.mark.db
def test_the_stored_sweep_never_goes_back(
    recorded: Callable[..., tuple[Run, runner.ProgressRecorder]],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.0)  # every call writes
    run, recorder = recorded()
    stored = []
    for iteration, cost in [(3, 5.0), (10, 4.0), (4, 6.0), (12, 3.0), (11, 2.5)]:
        assert recorder(iteration, cost) is True
        session.expire_all()
        row = session.get(Run, run.id)
        assert row is not None
        stored.append((row.progress_iteration, row.progress_cost))
    # The cost is the latest reported; the sweep the highest.
    assert stored == [(3, 5.0), (10, 4.0), (10, 6.0), (12, 3.0), (12, 2.5)]


@pytest.mark.db
def test_asking_whether_to_go_on_records_nothing_and_sees_a_cancel(
    client: TestClient,
    recorded: Callable[..., tuple[Run, runner.ProgressRecorder]],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CEC-IB's weight search asks (ASK_ONLY) between its sweeps: no cost in the history, no
    sweep on the bar, and a cancel requested meanwhile answers stop; another worker's claim
    too."""
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.0)  # every call reads
    run, asking = recorded(progress_iteration=2)
    assert asking(ASK_ONLY, math.nan) is True
    assert asking.history == []
    session.expire_all()
    assert session.get(Run, run.id).progress_iteration == 2  # type: ignore[union-attr]
    run.cancel_requested = True
    session.commit()
    assert asking(ASK_ONLY, math.nan) is False and asking.stop_reason == "cancelled"
    run.cancel_requested, run.worker_key = False, "another-worker"
    session.commit()
    taken = _recorder(client, run)
    assert taken(ASK_ONLY, math.nan) is False and taken.stop_reason == runner.GONE


@pytest.mark.db
def test_a_question_does_not_hold_back_the_first_sweeps_write(
    recorded: Callable[..., tuple[Run, runner.ProgressRecorder]],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writes are throttled, but a fit that follows the weight search's questions within the
    throttle's interval still stores its first sweep (a short fit stored none: found by CI)."""
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 60.0)
    run, recorder = recorded()
    assert recorder(ASK_ONLY, math.nan) is True
    assert recorder(ASK_ONLY, math.nan) is True  # within the interval: not even read
    assert recorder(1, 4.5) is True
    session.expire_all()
    stored = session.get(Run, run.id)
    assert stored is not None and (stored.progress_iteration, stored.progress_cost) == (1, 4.5)


@pytest.mark.db
def test_an_image_run_stores_a_sweep_that_never_goes_back(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """End to end: a CEC-IB run on a scribbled image, every progress call written, the stored
    sweep read back after each write."""
    pixels, truth = two_regions(48, 64, noise=12.0)
    created = upload_image(client, project_id, admin_headers, pixels, truth).json()
    assert wait_ready(client, admin_headers, created["id"])["status"] == "ready"
    for label, points in (("disc", [[14, 24], [30, 24]]), ("background", [[50, 5], [60, 40]])):
        body = {
            "kind": "scribble",
            "label": label,
            "strokes": [{"points": points, "radius": 2.0}],
        }
        response = client.post(
            f"/api/v1/datasets/{created['id']}/annotations", json=body, headers=admin_headers
        )
        assert response.status_code == 201, response.text

    reported: list[int] = []
    stored: list[int] = []
    record = runner.ProgressRecorder._record

    def spy(self: runner.ProgressRecorder, iteration: int, cost: float) -> bool:
        reported.append(iteration)
        answer = record(self, iteration, cost)
        with self.claim.factory() as session:
            row = session.get(Run, self.claim.run_id)
            assert row is not None and row.progress_iteration is not None
            stored.append(row.progress_iteration)
        return answer

    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.0)
    monkeypatch.setattr(runner.ProgressRecorder, "_record", spy)
    run = run_succeeded(client, admin_headers, created["id"], "cec-ib", n_clusters=6)
    assert len(reported) > 2
    assert reported == sorted(reported)
    assert stored == sorted(stored) and stored[-1] == run["progress_iteration"]
