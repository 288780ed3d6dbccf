"""Request dependencies: the database session, the signed-in user, and project roles.

Every permission check goes through `ProjectAccess`; route bodies never check roles.
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import OAuth2PasswordBearer
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from app.api.schemas.common import Id
from app.config import Settings
from app.db.models import Dataset, Project, Role, Run, User
from app.services import accounts, datasets, projects, runs
from app.services.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound

oauth2_scheme = OAuth2PasswordBearer(tokenUrl="/api/v1/auth/token", auto_error=False)


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    session: Session = request.app.state.session_factory()
    try:
        yield session
    finally:
        session.rollback()  # anything a route did not commit is discarded
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]


def request_secret(request: Request, bearer: str | None) -> str | None:
    """The bearer token, or else the browser's session cookie."""
    if bearer:
        return bearer
    settings: Settings = request.app.state.settings
    return request.cookies.get(settings.session_cookie_name)


def client_of(request: Request) -> accounts.Client:
    """The request's client: the connecting peer's address (a trusted proxy's word for it when
    TRUSTED_PROXIES names the peer, app/main.py) and its User-Agent."""
    address = request.client.host if request.client else None
    return accounts.Client(address, request.headers.get("user-agent"))


def optional_user(
    request: Request, session: SessionDep, bearer: Annotated[str | None, Depends(oauth2_scheme)]
) -> User | None:
    """The signed-in user, or None; `request.state.token_id` is the token the request came
    with (None without one), so a page can tell the caller's own session apart."""
    secret = request_secret(request, bearer)
    address = client_of(request).address
    token = accounts.live_token(session=session, secret=secret, address=address) if secret else None
    request.state.token_id = None if token is None else token.id
    return None if token is None else token.user


def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise NotAuthenticated("sign in first: send a bearer token or a session cookie")
    return user


CurrentUser = Annotated[User, Depends(current_user)]


def admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise Forbidden("only administrators may do this")
    return user


AdminUser = Annotated[User, Depends(admin_user)]


@dataclass(frozen=True)
class ProjectAccess:
    """The project a request is about, the caller's role in it, and the dataset/run if any."""

    user: User
    project: Project
    role: Role
    dataset: Dataset | None = None
    run: Run | None = None

    def require_dataset(self) -> Dataset:
        if self.dataset is None:
            raise NotFound("this request names no dataset")
        return self.dataset

    def require_run(self) -> Run:
        if self.run is None:
            raise NotFound("this request names no run")
        return self.run


def resolve_access(
    session: Session, user: User, ids: Mapping[str, Any], minimum: Role
) -> ProjectAccess:
    """Find the project from `run_id`, `dataset_id` or `project_id` and check the user's role.

    Non-members get 404, as if the project did not exist; members with too small a role get 403.
    """
    run = dataset = None
    if "run_id" in ids:
        run = runs.get_run(session=session, run_id=_path_id(ids["run_id"], "run"))
        dataset = datasets.get_dataset(session=session, dataset_id=run.dataset_id)
    elif "dataset_id" in ids:
        dataset_id = _path_id(ids["dataset_id"], "dataset")
        dataset = datasets.get_dataset(session=session, dataset_id=dataset_id)
    project_id = dataset.project_id if dataset else _path_id(ids["project_id"], "project")
    project = projects.get_project(session=session, project_id=project_id)
    role = projects.role_in_project(session=session, user=user, project_id=project.id)
    if role is None:
        if run is not None:
            raise NotFound(f"no run with id {run.id}")
        if dataset is not None:
            raise NotFound(f"no dataset with id {dataset.id}")
        raise NotFound(f"no project with id {project_id}")
    if not role.allows(minimum):
        raise Forbidden(
            f"your role in project {project.id} is {role.value}; this needs {minimum.value}"
        )
    return ProjectAccess(user=user, project=project, role=role, dataset=dataset, run=run)


def project_role(minimum: Role) -> Callable[..., ProjectAccess]:
    """A dependency: the path names the project (directly, or by a dataset or run in it) and the
    user's role there must be at least `minimum`."""

    def check(request: Request, session: SessionDep, user: CurrentUser) -> ProjectAccess:
        return resolve_access(session, user, request.path_params, minimum)

    return check


def _path_id(raw: Any, what: str) -> int:
    # Dependencies run before FastAPI validates the path, so check the id here too, with the
    # bounds of the published schema (an id past 64 bits never reaches the database).
    try:
        value = int(raw)
    except ValueError:
        raise NotFound(f"no {what} with id {raw!r}") from None
    try:
        return _ID.validate_python(value)
    except ValidationError as exc:
        raise InvalidInput(f"{what}_id: {exc.errors()[0]['msg']}") from None


_ID: TypeAdapter[int] = TypeAdapter(Id)


ViewerAccess = Annotated[ProjectAccess, Depends(project_role(Role.viewer))]
EditorAccess = Annotated[ProjectAccess, Depends(project_role(Role.editor))]
OwnerAccess = Annotated[ProjectAccess, Depends(project_role(Role.owner))]
