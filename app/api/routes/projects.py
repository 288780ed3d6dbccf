from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status

from app.api.deps import CurrentUser, OwnerAccess, SessionDep, ViewerAccess
from app.api.job_signals import runs_changed
from app.api.paging import Paging
from app.api.schemas.common import ERROR_RESPONSES, Id, Name
from app.api.schemas.projects import (
    MemberRead,
    MembersPage,
    MemberWrite,
    ProjectCreate,
    ProjectRead,
    ProjectsPage,
)
from app.db.models import Role
from app.services import projects, runs

router = APIRouter(prefix="/projects", tags=["projects"], responses=ERROR_RESPONSES)


@router.get("", response_model=ProjectsPage)
def read_projects(session: SessionDep, user: CurrentUser, page: Paging) -> ProjectsPage:
    items, total = projects.list_projects(
        session=session, user=user, limit=page.limit, offset=page.offset
    )
    return ProjectsPage.of(items, total, page)


@router.post("", response_model=ProjectRead, status_code=status.HTTP_201_CREATED)
def create_project(
    project_in: ProjectCreate, session: SessionDep, user: CurrentUser
) -> ProjectRead:
    """Create a project; the caller becomes its owner."""
    project = projects.create_project(
        session=session, owner=user, name=project_in.name, description=project_in.description
    )
    session.commit()
    return ProjectRead.model_validate(project)


@router.get("/{project_id}", response_model=ProjectRead)
def read_project(project_id: Id, access: ViewerAccess) -> ProjectRead:
    return ProjectRead.model_validate(access.project)


@router.delete("/{project_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_project(
    project_id: Id, request: Request, session: SessionDep, access: OwnerAccess
) -> Response:
    """Delete a project with everything in it; its queued and running runs stop."""
    active = runs.active_run_ids(session=session, project_id=project_id)
    projects.delete_project(session=session, project=access.project)
    session.commit()
    runs_changed(request.app.state, active, stop=True)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{project_id}/members", response_model=MembersPage)
def read_members(
    project_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: Paging,
) -> MembersPage:
    rows = projects.list_members(session=session, project=access.project)
    items = [MemberRead(username=u.username, role=Role(m.role)) for m, u in rows]
    return MembersPage.window(items, page)


@router.put("/{project_id}/members", response_model=MemberRead)
def set_member(
    project_id: Id, member_in: MemberWrite, session: SessionDep, access: OwnerAccess
) -> MemberRead:
    """Add a user to the project or change their role (owners only)."""
    projects.set_member_role(
        session=session, project=access.project, username=member_in.username, role=member_in.role
    )
    session.commit()
    return MemberRead(username=member_in.username, role=member_in.role)


@router.delete("/{project_id}/members/{username}", status_code=status.HTTP_204_NO_CONTENT)
def remove_member(
    project_id: Id,
    username: Annotated[Name, Path(max_length=64)],
    session: SessionDep,
    access: OwnerAccess,
) -> Response:
    projects.remove_member(session=session, project=access.project, username=username)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
