"""Server-rendered pages. Each page calls the same services as the JSON API."""

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.deps import (
    CurrentUser,
    EditorAccess,
    OwnerAccess,
    SessionDep,
    SettingsDep,
    ViewerAccess,
    client_of,
)
from app.api.job_signals import (
    delete_dataset_stopping_runs,
    featurization_queued,
    featurizations_queued,
    runs_changed,
)
from app.api.uploads import UploadForm, import_collection, import_uploaded_file
from app.db.models import Dataset, Role
from app.services import (
    accounts,
    collection_imports,
    datasets,
    deep_zoom,
    imports,
    projects,
    source_sync,
)
from app.services.errors import ServiceError, TooManyRequests
from app.services.ingest.upload import UploadLimits
from app.services.login_throttle import ThrottlePolicy
from app.services.source_reads import SourceUnreadable
from app.web.security import WORKSPACE_CONTENT_SECURITY_POLICY
from app.web.templating import templates
from app.web.token_pages import router as token_pages_router

router = APIRouter(include_in_schema=False)
router.include_router(token_pages_router)  # the API tokens page

ITEMS_PER_PAGE = 50


def _render(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
    response: HTMLResponse = templates.TemplateResponse(request, template, context)
    return response


def _safe_next(target: str | None) -> str:
    # Only same-site paths: "//evil.example" or "https://..." would be an open redirect.
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/projects"


@router.get("/", response_class=RedirectResponse)
def index() -> RedirectResponse:
    return RedirectResponse("/projects", status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> HTMLResponse:
    return _render(request, "login.html", {"user": None, "next": _safe_next(next), "error": None})


@router.post("/login", response_model=None)
def login(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    username: Annotated[str, Form()],
    password: Annotated[str, Form()],
    next: Annotated[str | None, Form()] = None,
) -> Response:
    try:
        user = accounts.sign_in(
            session=session,
            username=username,
            password=password,
            address=client_of(request).address,
            policy=ThrottlePolicy.from_settings(settings),
        )
    except ServiceError as exc:
        context = {
            "user": None,
            "next": _safe_next(next),
            "error": exc.detail,
            "username": username,
        }
        # A re-rendered form is a normal page (200); the message says what went wrong. A
        # throttled attempt keeps its 429 and Retry-After.
        page = _render(request, "login.html", context)
        if isinstance(exc, TooManyRequests):
            page.status_code = exc.status_code
            page.headers["Retry-After"] = str(exc.retry_after)
        return page
    lifetime = timedelta(hours=settings.session_lifetime_hours)
    _, secret = accounts.issue_token(
        session=session,
        user=user,
        kind="session",
        name="browser session",
        lifetime=lifetime,
        client=client_of(request),
    )
    session.commit()
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(
        settings.session_cookie_name,
        secret,
        max_age=int(lifetime.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=settings.session_cookie_secure,
        path="/",
    )
    return response


@router.post("/logout", response_class=RedirectResponse)
def logout(request: Request, session: SessionDep, settings: SettingsDep) -> RedirectResponse:
    secret = request.cookies.get(settings.session_cookie_name)
    if secret:
        accounts.revoke_secret(session=session, secret=secret)
        session.commit()
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(settings.session_cookie_name, path="/")
    return response


@router.get("/projects", response_class=HTMLResponse)
def projects_page(request: Request, session: SessionDep, user: CurrentUser) -> HTMLResponse:
    items, _ = projects.list_projects(session=session, user=user, limit=1000, offset=0)
    return _render(request, "projects.html", {"user": user, "projects": items})


@router.post("/projects", response_class=RedirectResponse)
def create_project(
    session: SessionDep,
    user: CurrentUser,
    name: Annotated[str, Form()],
    description: Annotated[str, Form()] = "",
) -> RedirectResponse:
    project = projects.create_project(
        session=session, owner=user, name=name, description=description
    )
    session.commit()
    return RedirectResponse(f"/projects/{project.id}", status_code=303)


def _project_context(session: SessionDep, access: ViewerAccess) -> dict[str, Any]:
    items, _ = datasets.list_datasets(session=session, project=access.project, limit=1000, offset=0)
    members = projects.list_members(session=session, project=access.project)
    return {
        "user": access.user,
        "project": access.project,
        "role": access.role,
        "can_edit": access.role.allows(Role.editor),
        "can_manage": access.role.allows(Role.owner),
        "roles": [r.value for r in Role],
        "member_error": None,
        "datasets": items,
        "members": [(u.username, m.role) for m, u in members],
        "error": None,
        "form": {},
        # Where tables may be imported by reference from (their URLs only, never options).
        "import_sources": imports.open_prefixes(session),
    }


@router.get("/projects/{project_id}", response_class=HTMLResponse)
def project_page(
    project_id: int, request: Request, session: SessionDep, access: ViewerAccess
) -> HTMLResponse:
    return _render(request, "project.html", _project_context(session, access))


def _member_change(
    request: Request, session: SessionDep, access: OwnerAccess, change: Any
) -> Response:
    """Run a membership change; on a refusal (unknown user, the last owner leaving) the page
    comes back with the reason and nothing changed."""
    try:
        change()
    except ServiceError as exc:
        return _project_page_refusing(request, session, access, member_error=exc.detail)
    session.commit()
    return RedirectResponse(f"/projects/{access.project.id}#members", status_code=303)


def _project_page_refusing(
    request: Request, session: SessionDep, access: ViewerAccess, **why: Any
) -> HTMLResponse:
    """The project page again after a refused form: nothing written, the reason shown."""
    session.rollback()
    return _render(request, "project.html", {**_project_context(session, access), **why})


@router.post("/projects/{project_id}/members", response_model=None)
def set_member(
    project_id: int,
    request: Request,
    session: SessionDep,
    access: OwnerAccess,
    username: Annotated[str, Form(max_length=64)],
    role: Annotated[Role, Form()],
) -> Response:
    """Add a user to the project, or change their role (owners only)."""
    return _member_change(
        request,
        session,
        access,
        lambda: projects.set_member_role(
            session=session, project=access.project, username=username.strip(), role=role
        ),
    )


@router.post("/projects/{project_id}/members/{username}/remove", response_model=None)
def remove_member(
    project_id: int, username: str, request: Request, session: SessionDep, access: OwnerAccess
) -> Response:
    return _member_change(
        request,
        session,
        access,
        lambda: projects.remove_member(session=session, project=access.project, username=username),
    )


@router.post("/projects/{project_id}/datasets", response_model=None)
def upload_dataset(
    project_id: int,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    file: Annotated[UploadFile, File()],
    name: Annotated[str, Form()] = "",
    ground_truth_column: Annotated[str, Form()] = "",
    id_column: Annotated[str, Form()] = "",
) -> Response:
    try:
        form = UploadForm(name, id_column, ground_truth_column)
        dataset = import_uploaded_file(session, settings, access, file, form)
    except ServiceError as exc:
        typed = {"name": name, "ground_truth_column": ground_truth_column, "id_column": id_column}
        return _project_page_refusing(request, session, access, error=exc.detail, form=typed)
    session.commit()
    featurization_queued(request.app.state, dataset.id, dataset.status)
    return RedirectResponse(f"/datasets/{dataset.id}", status_code=303)


@router.post("/projects/{project_id}/collections", response_model=None)
def upload_collection(
    project_id: int,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    files: Annotated[list[UploadFile], File()],
    collection_name: Annotated[str, Form()] = "",
) -> Response:
    """Several images (or a TIFF stack's planes) as one collection, back to the project page."""
    try:
        made = import_collection(session, settings, access, files, collection_name)
    except ServiceError as exc:
        typed = {"collection_name": collection_name}
        return _project_page_refusing(
            request, session, access, collection_error=exc.detail, form=typed
        )
    session.commit()
    featurizations_queued(request.app.state, made)
    return RedirectResponse(f"/projects/{project_id}", status_code=303)


@router.post("/projects/{project_id}/datasets/import", response_model=None)
def import_by_reference(
    project_id: int,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    url: Annotated[str, Form(max_length=2000)] = "",
    import_name: Annotated[str, Form(max_length=200)] = "",
    import_id_column: Annotated[str, Form(max_length=200)] = "",
    import_ground_truth_column: Annotated[str, Form(max_length=200)] = "",
    import_as_collection: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """A table or image imported by reference from the form, then its page (a folder of
    images as a collection: the project's page, which lists them); refused in place."""
    typed = {
        "url": url,
        "import_name": import_name,
        "import_id_column": import_id_column,
        "import_ground_truth_column": import_ground_truth_column,
        "import_as_collection": import_as_collection,
    }
    name = import_name.strip() or url.rstrip("/").rsplit("/", 1)[-1]
    try:
        if import_as_collection:
            made = collection_imports.import_collection_by_reference(
                session=session, project=access.project, user=access.user, name=name,
                url=url.strip(), limits=UploadLimits.from_settings(settings),
            )  # fmt: skip
            session.commit()
            featurizations_queued(request.app.state, made)
            return RedirectResponse(f"/projects/{project_id}", status_code=303)
        dataset = imports.import_by_reference(
            session=session,
            project=access.project,
            user=access.user,
            request=imports.ImportRequest(
                name=name,
                url=url.strip(),
                id_column=import_id_column.strip() or None,
                ground_truth_column=import_ground_truth_column.strip() or None,
            ),
            limits=UploadLimits.from_settings(settings),
        )
    except ServiceError as exc:
        return _project_page_refusing(request, session, access, import_error=exc.detail, form=typed)
    session.commit()
    featurization_queued(request.app.state, dataset.id, dataset.status)
    return RedirectResponse(f"/datasets/{dataset.id}", status_code=303)


@router.get("/datasets/{dataset_id}", response_class=HTMLResponse)
def dataset_page(
    dataset_id: int,
    request: Request,
    session: SessionDep,
    access: ViewerAccess,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> HTMLResponse:
    return _dataset_page(request, session, access, offset)


@router.post("/datasets/{dataset_id}/sync", response_model=None)
def sync_dataset(
    dataset_id: int,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
) -> Response:
    """A dataset imported by reference brought up to date (an image of a collection by
    reference: the whole collection); its page, saying what was done."""
    dataset = access.require_dataset()
    if (dataset.meta.get("source") or {}).get("collection"):
        return _sync_collection(request, session, settings, access, dataset)
    try:
        report = source_sync.sync_dataset(session=session, dataset=dataset, user=access.user)
        session.commit()
    except ServiceError as exc:
        session.rollback()
        return _dataset_page(request, session, access, 0, sync_error=exc.detail)
    if not report.reading:
        said = "The source is as it was read: nothing to do."
        return _dataset_page(request, session, access, 0, sync_message=said)
    featurization_queued(request.app.state, dataset.id, dataset.status)
    # The page follows the read and shows itself again when it is done (js/dataset.js).
    return RedirectResponse(f"/datasets/{dataset.id}", status_code=303)


def _sync_collection(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    access: EditorAccess,
    dataset: Dataset,
) -> Response:
    """The image's collection brought up to date with its folder; the image's page saying
    what was done (the project's page when the image itself went)."""
    dataset_id = dataset.id
    try:
        done = collection_imports.sync_collection(
            session=session, project=access.project, user=access.user,
            name=dataset.meta["collection"], limits=UploadLimits.from_settings(settings),
        )  # fmt: skip
    except ServiceError as exc:
        session.rollback()
        return _dataset_page(request, session, access, 0, sync_error=exc.detail)
    session.commit()
    runs_changed(request.app.state, done.stopped_runs, stop=True)
    featurizations_queued(request.app.state, [*done.new, *done.changed])
    if session.get(Dataset, dataset_id) is None:  # its image went from the folder
        return RedirectResponse(f"/projects/{access.project.id}", status_code=303)
    found = len(done.new) + len(done.changed) + len(done.deleted) + len(done.kept)
    said = (
        "The folder is as it was read: nothing to do."
        if not found
        else f"The collection was brought up to date: {len(done.new)} new, "
        f"{len(done.changed)} changed, {len(done.deleted)} gone and removed, "
        f"{len(done.kept)} gone but kept for their annotations."
    )
    return _dataset_page(request, session, access, 0, sync_message=said)


def _dataset_page(
    request: Request, session: SessionDep, access: ViewerAccess, offset: int, **said: str
) -> HTMLResponse:
    dataset = access.require_dataset()
    source_problem = None
    try:
        rows = datasets.read_items(
            session=session, dataset=dataset, limit=ITEMS_PER_PAGE, offset=offset
        )
    except SourceUnreadable as exc:  # read in place: the source changed or went
        rows, source_problem = [], exc.detail
    context = {
        "user": access.user,
        "project": access.project,
        "dataset": dataset,
        "rows": rows,
        "offset": offset,
        "limit": ITEMS_PER_PAGE,
        "can_edit": access.role.allows(Role.editor),
        "can_delete": access.role.allows(Role.owner),
        "preview": deep_zoom.preview_url(dataset) if dataset.kind == "image" else "",
        "source_problem": source_problem,
        "sync_message": said.get("sync_message"),
        "sync_error": said.get("sync_error"),
    }
    return _render(request, "dataset.html", context)


@router.get("/datasets/{dataset_id}/workspace", response_class=HTMLResponse)
def workspace_page(dataset_id: int, request: Request, access: ViewerAccess) -> HTMLResponse:
    """The workspace: a scatterplot for tables, a painting canvas for images. The page itself
    talks only to the public JSON API."""
    dataset = access.require_dataset()
    context = {
        "user": access.user,
        "project": access.project,
        "dataset": dataset,
        "can_edit": access.role.allows(Role.editor),
    }
    if dataset.kind == "image":
        # Plain 2-D canvas code: the default policy (no 'unsafe-eval', no blob: workers) holds.
        return _render(request, "image_workspace.html", context)
    response = _render(request, "workspace.html", context)
    response.headers["Content-Security-Policy"] = WORKSPACE_CONTENT_SECURITY_POLICY
    return response


@router.post("/datasets/{dataset_id}/delete", response_class=RedirectResponse)
def delete_dataset(
    dataset_id: int, request: Request, session: SessionDep, access: OwnerAccess
) -> RedirectResponse:
    delete_dataset_stopping_runs(request.app.state, session, access.require_dataset())
    return RedirectResponse(f"/projects/{access.project.id}", status_code=303)
