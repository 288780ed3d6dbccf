"""A run's `stage`: 'preparing' while the server has not fitted its method yet and no sweep has
been reported (numba may be compiling its kernels: the page says "preparing the engine"), then
'fitting'; null once it is not running."""

from datetime import UTC, datetime
from typing import Any

import pytest

from app.api.schemas.runs import RunRead
from app.jobs.warmup import engine_state


def _run(**fields: Any) -> RunRead:
    base: dict[str, Any] = {
        "id": 1,
        "dataset_id": 1,
        "algorithm": "cec-ib",
        "params": {},
        "annotation_revision": 0,
        "status": "running",
        "progress_iteration": None,
        "progress_cost": None,
        "cancel_requested": False,
        "error": None,
        "engine_version": "x",
        "created_at": datetime.now(UTC),
        "started_at": None,
        "finished_at": None,
    }
    return RunRead.model_validate({**base, **fields})


@pytest.fixture(autouse=True)
def _tracking() -> Any:
    engine_state.reset(tracking=True)
    yield
    engine_state.reset()


def test_a_cold_method_is_preparing_until_its_first_sweep() -> None:
    assert _run().stage == "preparing"
    assert _run().model_dump()["stage"] == "preparing"  # in the API's JSON too
    assert _run(progress_iteration=1).stage == "fitting"
    assert _run(status="queued").stage is None
    assert _run(status="succeeded", progress_iteration=4).stage is None


def test_a_method_fitted_once_is_not_preparing() -> None:
    with engine_state.fitting("cec-ib"):
        assert _run().stage == "preparing"
    assert _run().stage == "fitting"
    assert _run(algorithm="ppc").stage == "preparing"


def test_without_tracking_nothing_is_preparing() -> None:
    engine_state.reset(tracking=False)  # runs fit on Dask workers: this process cannot tell
    assert _run().stage == "fitting"
