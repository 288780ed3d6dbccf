import csv
import io
import json
import time
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from app.api.deps import (
    CurrentUser,
    EditorAccess,
    ProjectAccess,
    SessionDep,
    ViewerAccess,
    resolve_access,
)
from app.api.schemas.common import ERROR_RESPONSES
from app.api.schemas.runs import RunCreate, RunRead, RunResultRead, RunsPage
from app.db.models import Role, Run
from app.db.session import session_scope
from app.services import runs
from app.services.npy_export import npy_stream

router = APIRouter(tags=["runs"], responses=ERROR_RESPONSES)

EVENT_POLL_S = 0.25


def run_create_access(run_in: RunCreate, session: SessionDep, user: CurrentUser) -> ProjectAccess:
    return resolve_access(session, user, {"dataset_id": run_in.dataset_id}, Role.editor)


@router.post("/runs", response_model=RunRead, status_code=status.HTTP_202_ACCEPTED)
def create_run(
    run_in: RunCreate,
    request: Request,
    session: SessionDep,
    access: Annotated[ProjectAccess, Depends(run_create_access)],
) -> RunRead:
    """Validate, freeze the side information at the current annotation revision, and queue.

    Returns at once; poll `GET /runs/{id}` or stream `GET /runs/{id}/events`."""
    run = runs.start_run(
        session=session,
        dataset=access.require_dataset(),
        user=access.user,
        algorithm_id=run_in.algorithm,
        params=run_in.params,
    )
    session.commit()
    request.app.state.executor.submit(run.id)
    return RunRead.model_validate(run)


@router.get("/datasets/{dataset_id}/runs", response_model=RunsPage)
def read_runs(
    dataset_id: int,
    session: SessionDep,
    access: ViewerAccess,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> RunsPage:
    """Runs of a dataset, newest first."""
    rows, total = runs.list_runs(
        session=session, dataset=access.require_dataset(), limit=limit, offset=offset
    )
    return RunsPage(
        items=[RunRead.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )


@router.get("/runs/{run_id}", response_model=RunRead)
def read_run(run_id: int, access: ViewerAccess) -> RunRead:
    return RunRead.model_validate(access.require_run())


@router.post("/runs/{run_id}/cancel", response_model=RunRead)
def cancel_run(run_id: int, request: Request, session: SessionDep, access: EditorAccess) -> RunRead:
    """Stop a queued or running run; a running one stops at its next sweep."""
    run = runs.request_cancel(session=session, run=access.require_run())
    session.commit()
    request.app.state.executor.cancel(run.id)
    return RunRead.model_validate(run)


@router.get(
    "/runs/{run_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
def stream_run_events(run_id: int, request: Request, access: ViewerAccess) -> StreamingResponse:
    """Server-sent events: a `progress` event whenever status or progress changes, ending with
    the final state."""
    factory = request.app.state.session_factory

    def events() -> Iterator[str]:
        last = None
        while True:
            with session_scope(factory) as session:
                run = session.get(Run, run_id)
                assert run is not None
                state = RunRead.model_validate(run).model_dump(mode="json")
            if state != last:
                yield f"event: progress\ndata: {json.dumps(state)}\n\n"
                last = state
            if state["status"] in runs.TERMINAL:
                return
            time.sleep(EVENT_POLL_S)

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


@router.get(
    "/runs/{run_id}/result",
    response_model=RunResultRead,
    responses={200: {"content": {"text/csv": {}, "application/x-npy": {}}}},
)
def read_run_result(
    run_id: int,
    session: SessionDep,
    access: ViewerAccess,
    format: Literal["json", "csv", "npy"] = "json",
) -> Response | RunResultRead:
    """Cluster labels (one per item, in row order) with metrics: JSON, CSV (item, id, cluster)
    or NPY (int32)."""
    run = access.require_run()
    result = runs.get_result(session=session, run=run)
    labels = runs.result_labels(result)
    if format == "npy":
        body = b"".join(npy_stream([labels], dtype="int32", shape=labels.shape))
        return Response(body, media_type="application/x-npy", headers=_attachment(run, "npy"))
    if format == "csv":
        ids = runs.item_ids(session=session, dataset=access.require_dataset())
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["item", "id", "cluster"])
        writer.writerows(zip(range(len(labels)), ids, labels.tolist(), strict=True))
        return Response(out.getvalue(), media_type="text/csv", headers=_attachment(run, "csv"))
    return RunResultRead(
        run_id=run.id,
        n_items=len(labels),
        n_clusters=int(result.metrics.get("n_clusters", 0)),
        labels=labels.tolist(),
        metrics=result.metrics,
        cluster_params=result.cluster_params,
        cost_history=result.cost_history,
    )


def _attachment(run: Run, extension: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="run-{run.id}-clusters.{extension}"'}
