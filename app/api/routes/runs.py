import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from app.api.deps import (
    CurrentUser,
    EditorAccess,
    ProjectAccess,
    SessionDep,
    SettingsDep,
    ViewerAccess,
    current_user,
    oauth2_scheme,
    optional_user,
    resolve_access,
)
from app.api.file_responses import file_response
from app.api.job_signals import runs_changed
from app.api.paging import Paging
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED, Id
from app.api.schemas.runs import (
    RunApply,
    RunBatch,
    RunCreate,
    RunRead,
    RunResultRead,
    RunsPage,
    WrittenLabelsRead,
)
from app.db.models import Role, Run
from app.jobs.run.run_events import RunEvents
from app.services import label_write_back, runs, slide_masks
from app.services.csv_export import csv_text
from app.services.npy_export import npy_stream
from app.store.dataset_arrays import load_item_ids

router = APIRouter(tags=["runs"], responses=ERROR_RESPONSES)

EVENT_POLL_S = 1.0  # how often a stream re-reads a run whose changes nobody announces
HEARTBEAT_S = 15.0  # a keep-alive comment this often on a quiet stream
SHUTDOWN_RETRY_MS = 3000  # a stream ended by a stopping server: reconnect after this long


# Both operations that start a run answer 202 at once, or 429 over the user's run limit.
QUEUES_A_RUN: dict[str, Any] = {
    "response_model": RunRead,
    "status_code": status.HTTP_202_ACCEPTED,
    "responses": RATE_LIMITED,
}


def _queued(request: Request, session: Session, run: Run) -> RunRead:
    session.commit()
    request.app.state.executor.submit(run.id)
    return RunRead.model_validate(run)


def run_create_access(run_in: RunCreate, session: SessionDep, user: CurrentUser) -> ProjectAccess:
    return resolve_access(session, user, {"dataset_id": run_in.dataset_id}, Role.editor)


@router.post("/runs", **QUEUES_A_RUN)
def create_run(
    run_in: RunCreate,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: Annotated[ProjectAccess, Depends(run_create_access)],
) -> RunRead:
    """Validate, freeze the side information at the current annotation revision, and queue.

    Returns at once; poll `GET /runs/{id}` or stream `GET /runs/{id}/events`. A user with
    `MAX_ACTIVE_JOBS_PER_USER` runs and image featurizations queued or running gets 429
    with Retry-After."""
    run = runs.start_run(
        session=session,
        dataset=access.require_dataset(),
        user=access.user,
        algorithm_id=run_in.algorithm,
        params=run_in.params,
        max_active=settings.max_active_jobs_per_user,
        region=run_in.region.model_dump() if run_in.region else None,
    )
    return _queued(request, session, run)


@router.post(
    "/runs/{run_id}/apply",
    response_model=RunRead | RunBatch,
    status_code=status.HTTP_202_ACCEPTED,
    responses=RATE_LIMITED,
)
def apply_run(
    run_id: Id,
    apply_in: RunApply,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: ViewerAccess,
) -> RunRead | RunBatch:
    """Segment other images with this run's fitted model: the same featurization recipe and
    fitted reduction, the method's own prediction rule, the same cluster ids. Each new run
    belongs to its image (you need to be an editor there).

    `{"dataset_id": id}` answers with the run; `{"dataset_ids": [...]}` (a collection, up to
    1,000 images) with `{"items": [run, ...]}`, one run per image in the order given, each
    followed, cancelled and read like any run (`result.png`); every image is checked first,
    so one that cannot be segmented (a table, other channels) queues nothing. The masks of
    every image a run was applied to: `GET /runs/{id}/applied/masks.zip`."""
    source = access.require_run()
    ids = [apply_in.dataset_id] if apply_in.dataset_id is not None else apply_in.dataset_ids
    assert ids is not None  # RunApply requires one of the two
    targets = [
        resolve_access(session, access.user, {"dataset_id": i}, Role.editor).require_dataset()
        for i in ids
    ]
    queued = runs.start_apply_batch(
        session=session,
        source=source,
        targets=targets,
        user=access.user,
        max_active=settings.max_active_jobs_per_user,
    )
    session.commit()
    for run in queued:
        request.app.state.executor.submit(run.id)
    items = [RunRead.model_validate(run) for run in queued]
    return items[0] if apply_in.dataset_id is not None else RunBatch(items=items)


@router.get("/datasets/{dataset_id}/runs", response_model=RunsPage)
def read_runs(
    dataset_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: Paging,
) -> RunsPage:
    """Runs of a dataset, newest first."""
    rows, total = runs.list_runs(
        session=session, dataset=access.require_dataset(), limit=page.limit, offset=page.offset
    )
    return RunsPage.of(rows, total, page)


@router.get("/runs/{run_id}", response_model=RunRead)
def read_run(run_id: Id, access: ViewerAccess) -> RunRead:
    return RunRead.model_validate(access.require_run())


@router.post("/runs/{run_id}/cancel", response_model=RunRead)
def cancel_run(run_id: Id, request: Request, session: SessionDep, access: EditorAccess) -> RunRead:
    """Stop a queued or running run; a running one stops at its next sweep."""
    run = runs.request_cancel(session=session, run=access.require_run())
    session.commit()
    runs_changed(request.app.state, [run.id], stop=True)
    return RunRead.model_validate(run)


@router.get("/runs/{run_id}/events", **file_response("text/event-stream", streamed=True))
async def stream_run_events(
    run_id: Id, request: Request, bearer: Annotated[str | None, Depends(oauth2_scheme)]
) -> StreamingResponse:
    """Server-sent events: a `progress` event whenever status or progress changes, ending with
    the final state (or a `deleted` event if the run is deleted meanwhile, or a `shutdown`
    event, with a reconnection delay, if the server stops meanwhile).

    Waiting streams hold no database connection and no thread: they sleep until the runner
    says the run changed, and read it in a short session that they close at once."""
    factory = request.app.state.session_factory
    hub: RunEvents = request.app.state.run_events
    # Runs the server executes itself announce every change; others (Dask) are polled.
    max_age = HEARTBEAT_S if request.app.state.executor.notifies else EVENT_POLL_S

    def authorize() -> None:
        with factory() as session:
            user = current_user(optional_user(request, session, bearer))
            resolve_access(session, user, {"run_id": run_id}, Role.viewer)

    def read() -> dict[str, Any] | None:
        with factory() as session:
            run = session.get(Run, run_id)
            return None if run is None else RunRead.model_validate(run).model_dump(mode="json")

    async def read_in_thread() -> dict[str, Any] | None:
        return await run_in_threadpool(read)

    await run_in_threadpool(authorize)

    async def events() -> AsyncIterator[str]:
        last = None
        with hub.subscribe(run_id) as subscription:
            while True:
                state = await hub.state(run_id, read_in_thread, max_age)
                if state is None:
                    yield f"event: deleted\ndata: {json.dumps({'id': run_id})}\n\n"
                    return
                if state != last:
                    yield f"event: progress\ndata: {json.dumps(state)}\n\n"
                    last = state
                else:
                    yield ": keep-alive\n\n"  # lets proxies and the server see a gone client
                if state["status"] in runs.TERMINAL:
                    return
                if not hub.closing:
                    await subscription.wait(max_age)
                if hub.closing:
                    # Told, not cut: the client knows to reconnect once the server is back.
                    data = json.dumps({"id": run_id, "reason": "the server is stopping"})
                    yield f"event: shutdown\nretry: {SHUTDOWN_RETRY_MS}\ndata: {data}\n\n"
                    return

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


@router.get("/runs/{run_id}/result", response_model=RunResultRead)
def read_run_result(
    run_id: Id,
    request: Request,
    session: SessionDep,
    access: ViewerAccess,
    # Unpublished, kept for the pages' scripts: a client reads files with the operations below,
    # which each return one media type (a generated client cannot parse "JSON or a file").
    format: Annotated[
        Literal["json", "csv", "npy", "png"] | None, Query(include_in_schema=False)
    ] = None,
    labels: Annotated[
        bool,
        Query(
            description="false: leave `labels` out (null), for a client that reads them as "
            "NPY (4 bytes an item instead of a JSON list); the workspace does on every re-run"
        ),
    ] = True,
) -> Response | RunResultRead:
    """Cluster labels (one per item, in row order) with metrics. The same labels as files:
    `runs-result-csv`, `runs-result-npy`, and for an image `runs-result-png`."""
    if format == "png" or (format is None and _wants_png(request)):
        return read_run_mask(run_id, session, access)
    if format == "npy":
        return read_run_labels_npy(run_id, session, access)
    if format == "csv":
        return read_run_labels_csv(run_id, session, access)
    run = access.require_run()
    result = runs.get_result(session=session, run=run)
    listed = runs.result_labels(session=session, result=result).tolist() if labels else None
    return RunResultRead(
        run_id=run.id,
        n_items=len(listed)
        if listed is not None
        else runs.result_size(session=session, result=result),
        n_clusters=int(result.metrics.get("n_clusters", 0)),
        labels=listed,
        cluster_labels=result.metrics.get("cluster_labels", []),
        metrics=result.metrics,
        cluster_params=result.cluster_params,
        cost_history=result.cost_history,
    )


@router.get("/runs/{run_id}/result.csv", **file_response("text/csv"))
def read_run_labels_csv(run_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """Cluster labels as CSV: `item` (row position), `id` (the dataset's id column), `cluster`."""
    run = access.require_run()
    result = runs.get_result(session=session, run=run)
    labels = runs.result_labels(session=session, result=result)
    ids = load_item_ids(session=session, dataset=access.require_dataset())
    rows = zip(range(len(labels)), ids, labels.tolist(), strict=True)
    text = csv_text(["item", "id", "cluster"], rows)
    return Response(text, media_type="text/csv", headers=_attachment(run, "csv"))


@router.get("/runs/{run_id}/result.npy", **file_response("application/x-npy"))
def read_run_labels_npy(run_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """Cluster labels as an NPY file: int32, one per item in row order."""
    run = access.require_run()
    result = runs.get_result(session=session, run=run)
    labels = runs.result_labels(session=session, result=result)
    body = b"".join(npy_stream([labels], dtype="int32", shape=labels.shape))
    return Response(body, media_type="application/x-npy", headers=_attachment(run, "npy"))


@router.get("/runs/{run_id}/result.png", **file_response("image/png"))
def read_run_mask(run_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """Images: the full-resolution cluster mask as PNG, pixel value = cluster id (8-bit, or
    16-bit beyond 255 clusters); 409 for a table."""
    run = access.require_run()
    slide = runs.slide_of(session=session, run=run)
    if slide is not None:  # gigapixels: looked up and streamed band by band
        stream = slide_masks.mask_png(session, slide, run)
        return StreamingResponse(stream, media_type="image/png", headers=_attachment(run, "png"))
    mask = runs.result_mask(session=session, run=run)
    return Response(mask, media_type="image/png", headers=_attachment(run, "png"))


@router.post(
    "/runs/{run_id}/labels/write-back",
    response_model=WrittenLabelsRead,
    status_code=status.HTTP_201_CREATED,
)
def write_back_run_labels(
    run_id: Id, session: SessionDep, access: EditorAccess
) -> WrittenLabelsRead:
    """An OME-Zarr image imported by reference with `write_labels`: the run's mask written
    beside it as the NGFF label image `labels/run-<id>/` (value = cluster id + 1; 0: none),
    where napari, ilastik and QuPath find it. 422 for any other dataset; 409 when the run has
    no result or the image changed since it was imported."""
    run = access.require_run()
    written = label_write_back.write_back_labels(session=session, run=run)
    return WrittenLabelsRead(**written.__dict__)


def _wants_png(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "image/png" in accept and "application/json" not in accept


def _attachment(run: Run, extension: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="run-{run.id}-clusters.{extension}"'}
