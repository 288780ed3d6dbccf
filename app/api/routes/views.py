from typing import Literal

from fastapi import APIRouter, Response, status

from app.api.deps import EditorAccess, SessionDep, SettingsDep, ViewerAccess
from app.api.file_responses import file_response
from app.api.paging import Paging
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.api.schemas.views import ViewCreate, ViewRead, ViewsPage
from app.services import datasets, imports, views
from app.services.npy_export import npy_stream

router = APIRouter(prefix="/datasets/{dataset_id}/views", tags=["views"], responses=ERROR_RESPONSES)


@router.get("", response_model=ViewsPage)
def read_views(
    dataset_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: Paging,
) -> ViewsPage:
    items = views.list_views(session=session, dataset=access.require_dataset())
    return ViewsPage.window(items, page)


@router.post("", response_model=ViewRead, status_code=status.HTTP_201_CREATED)
def create_view(
    dataset_id: Id,
    view_in: ViewCreate,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> ViewRead:
    """A 2-D view from two features (`x`, `y`: names or indices), PCA, or UMAP (needs
    umap-learn)."""
    dataset = access.require_dataset()
    imports.require_unchanged(session, dataset)
    features = datasets.load_features(session=session, dataset=dataset)
    view = views.create_view(
        session=session,
        dataset=dataset,
        features=features,
        method=view_in.method,
        x=view_in.x,
        y=view_in.y,
        chunk_rows=settings.chunk_rows,
    )
    session.commit()
    return ViewRead.model_validate(view)


@router.get(
    "/{view_id}/coordinates",
    **file_response("application/octet-stream", "application/x-npy"),
)
def read_view_coordinates(
    dataset_id: Id,
    view_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    format: Literal["f32", "npy"] = "f32",
) -> Response:
    """Coordinates in binary: `f32` is raw little-endian float32, row-major (x0, y0, x1, y1,
    ...); `npy` is the same as an NPY file."""
    dataset = access.require_dataset()
    view = views.get_view(session=session, dataset=dataset, view_id=view_id)
    coords = views.view_coordinates(session=session, dataset=dataset, view=view)
    headers = {"X-Items": str(len(coords)), "Cache-Control": "private, max-age=3600"}
    if format == "npy":
        body = b"".join(npy_stream([coords], dtype="float32", shape=coords.shape))
        return Response(body, media_type="application/x-npy", headers=headers)
    return Response(
        coords.astype("<f4").tobytes(), media_type="application/octet-stream", headers=headers
    )
