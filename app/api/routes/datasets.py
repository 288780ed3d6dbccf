from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, Response, UploadFile, status
from fastapi.responses import StreamingResponse
from pydantic.json_schema import SkipJsonSchema

from app.api.deps import (
    CurrentUser,
    EditorAccess,
    OwnerAccess,
    SessionDep,
    SettingsDep,
    ViewerAccess,
)
from app.api.file_responses import file_response
from app.api.job_signals import delete_dataset_stopping_runs, featurization_queued
from app.api.paging import ItemsPaging, Paging
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED, Id, OptionalName
from app.api.schemas.datasets import (
    DatasetRead,
    DatasetsPage,
    FeaturizationInfo,
    ItemsPage,
)
from app.api.uploads import UploadForm, import_uploaded_file
from app.db.session import session_scope
from app.jobs.featurize.recipe import RecipeParams
from app.services import datasets, imports
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.image_rows import check_image_taken
from app.services.npy_export import npy_stream
from app.store import chunks, dataset_arrays

router = APIRouter(tags=["datasets"], responses=ERROR_RESPONSES)


@router.get("/projects/{project_id}/datasets", response_model=DatasetsPage)
def read_datasets(
    project_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: Paging,
) -> DatasetsPage:
    items, total = datasets.list_datasets(
        session=session, project=access.project, limit=page.limit, offset=page.offset
    )
    return DatasetsPage.of(items, total, page)


@router.post(
    "/projects/{project_id}/datasets",
    response_model=DatasetRead,
    status_code=status.HTTP_201_CREATED,
    responses=RATE_LIMITED,  # an image's featurization beyond the user's background jobs
)
def create_dataset(
    project_id: Id,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    file: Annotated[
        UploadFile, File(description="CSV with a header row, NPY, Parquet, PNG, JPEG or TIFF")
    ],
    name: Annotated[OptionalName | None, Form(max_length=200)] = None,
    ground_truth_column: Annotated[OptionalName | None, Form(max_length=200)] = None,
    id_column: Annotated[OptionalName | None, Form(max_length=200)] = None,
    label_column: Annotated[
        OptionalName | None,
        Form(
            max_length=200,
            description="Tables: a column of the expert's labels (empty cells: none); once the "
            "dataset is ready they are its label annotations, one per label, as one act",
        ),
    ] = None,
    ground_truth: Annotated[
        UploadFile | SkipJsonSchema[None],  # optional; multipart has no null to publish
        File(
            description="Images only: a PNG index image of the same size (value = class, 255 "
            "= unknown); runs then report mIoU and ARI against it"
        ),
    ] = None,
    *,
    request: Request,
) -> DatasetRead:
    """Upload a dataset. The whole file is validated before anything is stored. An image is
    then featurized in the background (`status`: `featurizing` -> `ready` or `failed`). A
    table's `label_column` becomes the uploader's label annotations (one per distinct label, all
    one act, undone by one undo); it is not a feature."""
    form = UploadForm(name, id_column, ground_truth_column, label_column)
    dataset = import_uploaded_file(session, settings, access, file, form, ground_truth)
    session.commit()
    featurization_queued(request.app.state, dataset.id, dataset.status)
    return DatasetRead.model_validate(dataset)


@router.get("/datasets/{dataset_id}", response_model=DatasetRead)
def read_dataset(dataset_id: Id, access: ViewerAccess) -> DatasetRead:
    return DatasetRead.model_validate(access.require_dataset())


@router.post(
    "/datasets/{dataset_id}/featurize",
    response_model=DatasetRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=RATE_LIMITED,
)
def featurize_dataset(
    dataset_id: Id,
    recipe: RecipeParams,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> DatasetRead:
    """Featurize an image again with `recipe` (see `GET /featurization`), in the background.
    Scribbles follow the new items; annotations naming items by index must be undone first."""
    dataset = datasets.refeaturize(
        session=session,
        dataset=access.require_dataset(),
        recipe=recipe,
        user=access.user,
        max_active_jobs=settings.max_active_jobs_per_user,
    )
    session.commit()
    featurization_queued(request.app.state, dataset.id, dataset.status)
    return DatasetRead.model_validate(dataset)


@router.get("/featurization", response_model=FeaturizationInfo)
def featurization_info(_user: CurrentUser) -> FeaturizationInfo:
    """The recipe an image is featurized with: its JSON Schema and the default."""
    return FeaturizationInfo(
        recipe_schema=RecipeParams.model_json_schema(),
        default_recipe=RecipeParams().model_dump(),
    )


@router.delete("/datasets/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dataset(
    dataset_id: Id, request: Request, session: SessionDep, access: OwnerAccess
) -> Response:
    """Delete a dataset with everything made from it; its queued and running runs stop."""
    delete_dataset_stopping_runs(request.app.state, session, access.require_dataset())
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/datasets/{dataset_id}/items", response_model=ItemsPage)
def read_items(
    dataset_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: ItemsPaging,
) -> ItemsPage:
    """Items in row order: id, feature values and ground truth; `total` is the item count."""
    dataset = access.require_dataset()
    rows = datasets.read_items(
        session=session, dataset=dataset, limit=page.limit, offset=page.offset
    )
    return ItemsPage.of(rows, dataset.n_items if dataset.status == "ready" else 0, page)


@router.get("/datasets/{dataset_id}/features", **file_response("application/x-npy", streamed=True))
def read_features(dataset_id: Id, request: Request, access: ViewerAccess) -> StreamingResponse:
    """The feature matrix as one NPY file (n_items x n_features), streamed chunk by chunk."""
    dataset = access.require_dataset()
    datasets.require_ready(dataset)
    with session_scope(request.app.state.session_factory) as check_session:
        imports.require_unchanged(check_session, dataset)
    factory = request.app.state.session_factory

    def body() -> Iterator[bytes]:
        # The request's session is closed once the route returns; streaming needs its own.
        with session_scope(factory) as stream_session:
            blocks = dataset_arrays.feature_blocks(session=stream_session, dataset=dataset)
            yield from npy_stream(
                blocks, dtype=dataset.dtype, shape=(dataset.n_items, dataset.n_features)
            )

    return StreamingResponse(
        body(),
        media_type="application/x-npy",
        headers={"Content-Disposition": f'attachment; filename="dataset-{dataset.id}.npy"'},
    )


@router.get("/datasets/{dataset_id}/image", **file_response("image/png", "image/jpeg"))
def read_image(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """The image as a browser shows it: a PNG or JPEG as it was uploaded; for a TIFF or an
    image of measured channels (16-bit, many channels), a PNG made at upload (channels
    scaled to their 0.5-99.5 percentile range, coloured and added). The uploaded file
    itself: `image/original`."""
    dataset = access.require_dataset()
    if dataset.kind != "image":
        raise InvalidInput(f"dataset {dataset.id} is a table, not an image")
    check_image_taken(dataset)
    if dataset_arrays.is_slide(dataset):
        raise Conflict(
            f"dataset {dataset.id} is a slide of {dataset.n_items:,} pixels: it is shown as "
            "Deep Zoom tiles (image.dzi); its file is image/original"
        )
    shown = chunks.read_blob(
        session=session, dataset_id=dataset.id, kind=dataset_arrays.DISPLAY_IMAGE
    )
    if shown is not None:
        return Response(content=shown, media_type="image/png")
    return read_original_image(dataset_id, session, access)


@router.get(
    "/datasets/{dataset_id}/image/original",
    **file_response("image/png", "image/jpeg", "image/tiff"),
)
def read_original_image(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """The uploaded image file, byte for byte."""
    dataset = access.require_dataset()
    if dataset.kind != "image":
        raise InvalidInput(f"dataset {dataset.id} is a table, not an image")
    check_image_taken(dataset)
    source = (dataset.meta or {}).get("source")
    if source:
        raise InvalidInput(
            f"dataset {dataset.id} is read in place from {source['url']}: its file is not "
            "kept here; read it there"
        )
    image_format = dataset.meta["image"]["format"]
    media = {"PNG": "image/png", "JPEG": "image/jpeg"}.get(image_format, "image/tiff")
    if dataset_arrays.is_slide(dataset):  # gigabytes: streamed a chunk at a time
        stored = chunks.iter_blob(session=session, dataset_id=dataset.id, kind=dataset_arrays.IMAGE)
        if stored is None:
            raise NotFound(f"dataset {dataset.id}'s file is missing from the array store")
        size, blocks = stored
        return StreamingResponse(blocks, media_type=media, headers={"Content-Length": str(size)})
    data = chunks.read_blob(session=session, dataset_id=dataset.id, kind=dataset_arrays.IMAGE)
    if data is None:
        raise NotFound(f"dataset {dataset.id}'s file is missing from the array store")
    return Response(content=data, media_type=media)


@router.get("/datasets/{dataset_id}/ground-truth", **file_response("application/octet-stream"))
def read_ground_truth(dataset_id: Id, session: SessionDep, access: ViewerAccess) -> Response:
    """Ground-truth class codes as raw little-endian int32, one per item (-1 = unknown); the
    class names are the dataset's `ground_truth_classes`."""
    dataset = access.require_dataset()
    if dataset.ground_truth_classes is None:
        raise InvalidInput(f"dataset {dataset.id} has no ground-truth column")
    codes = chunks.read_array(
        session=session,
        dataset_id=dataset.id,
        kind=dataset_arrays.GROUND_TRUTH,
        dtype="int32",
        n_columns=None,
    )
    return Response(codes.astype("<i4").tobytes(), media_type="application/octet-stream")
