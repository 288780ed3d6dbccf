from fastapi import APIRouter, Response

from app.api.deps import SessionDep, ViewerAccess
from app.api.file_responses import file_response
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.services.label_export import labels_and_clusters_csv

router = APIRouter(tags=["exports"], responses=ERROR_RESPONSES)


@router.get("/datasets/{dataset_id}/labels-clusters.csv", **file_response("text/csv"))
def read_labels_and_clusters(
    dataset_id: Id, session: SessionDep, access: ViewerAccess, run_id: Id | None = None
) -> Response:
    """Every item with its id, its label from the live annotations, and its cluster in run
    `run_id` (empty without one): the workspace's CSV export."""
    dataset = access.require_dataset()
    text = labels_and_clusters_csv(session=session, dataset=dataset, run_id=run_id)
    name = f"dataset-{dataset.id}-labels-clusters.csv"
    return Response(
        text,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
