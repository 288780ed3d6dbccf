"""A model applied to a collection of images: the runs with their progress, cancelling those
still going, and the masks as one ZIP (`POST /runs/{id}/apply` queues them)."""

from typing import Literal

from fastapi import APIRouter, Query, Request, Response

from app.api.deps import EditorAccess, SessionDep, ViewerAccess
from app.api.file_responses import file_response
from app.api.job_signals import runs_changed
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.api.schemas.runs import RunBatch, RunRead
from app.services import applied_runs

router = APIRouter(tags=["runs"], responses=ERROR_RESPONSES)


@router.get("/runs/{run_id}/applied", response_model=RunBatch)
def read_applied(run_id: Id, session: SessionDep, access: ViewerAccess) -> RunBatch:
    """Every run this run's model was applied to (on images you can see), in the order they
    were queued: each one's status and progress is the progress of its image."""
    rows = applied_runs.applied_runs(session=session, source=access.require_run(), user=access.user)
    return RunBatch(items=[RunRead.model_validate(r) for r in rows])


@router.post("/runs/{run_id}/applied/cancel", response_model=RunBatch)
def cancel_applied(
    run_id: Id, request: Request, session: SessionDep, access: EditorAccess
) -> RunBatch:
    """Cancel every queued or running apply of this run's model (on images you edit); the
    runs cancelled are returned. Finished ones keep their results."""
    rows = applied_runs.cancel_applied(
        session=session, source=access.require_run(), user=access.user
    )
    session.commit()
    runs_changed(request.app.state, [r.id for r in rows], stop=True)
    return RunBatch(items=[RunRead.model_validate(r) for r in rows])


@router.get("/runs/{run_id}/applied/masks.zip", **file_response("application/zip"))
def read_applied_masks(
    run_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    format: Literal["png", "tiff"] = Query(
        "png", description="png (8- or 16-bit) or tiff (deflated); pixel value = cluster id"
    ),
) -> Response:
    """The masks of every image this run's model was applied to (its latest finished apply
    each), named `<dataset id>-<dataset name>.png`; cluster ids mean what they mean in this
    run's own mask. 409 while none has finished."""
    run = access.require_run()
    data = applied_runs.masks_zip(session=session, source=run, user=access.user, fmt=format)
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="run-{run.id}-applied-masks.zip"'},
    )
