"""Projects and memberships. Admins act as owners of every project."""

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import Dataset, Membership, Project, Role, User
from app.services.accounts import get_user_by_username
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.paging import get_or_not_found
from app.store import chunks


def create_project(*, session: Session, owner: User, name: str, description: str = "") -> Project:
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("project name must be 1 to 200 characters")
    project = Project(name=name, description=description, created_by_id=owner.id)
    project.memberships.append(Membership(user_id=owner.id, role=Role.owner.value))
    session.add(project)
    session.flush()
    return project


def delete_project(*, session: Session, project: Project) -> None:
    """The project with everything in it (by cascade); its arrays leave the store once the
    deletion commits."""
    dataset_ids = list(session.scalars(select(Dataset.id).where(Dataset.project_id == project.id)))
    chunks.forget_datasets(session=session, dataset_ids=dataset_ids)
    session.delete(project)


def get_project(*, session: Session, project_id: int) -> Project:
    return get_or_not_found(session, Project, project_id, "project")


def role_in_project(*, session: Session, user: User, project_id: int) -> Role | None:
    if user.is_admin:
        return Role.owner
    role = session.scalar(
        select(Membership.role).where(
            Membership.project_id == project_id, Membership.user_id == user.id
        )
    )
    return Role(role) if role else None


def list_projects(
    *, session: Session, user: User, limit: int, offset: int
) -> tuple[list[Project], int]:
    query = select(Project)
    if not user.is_admin:
        query = query.join(Membership).where(Membership.user_id == user.id)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    projects = session.scalars(query.order_by(Project.id).limit(limit).offset(offset)).all()
    return list(projects), total


def list_members(*, session: Session, project: Project) -> list[tuple[Membership, User]]:
    rows = session.execute(
        select(Membership, User)
        .join(User, User.id == Membership.user_id)
        .where(Membership.project_id == project.id)
        .order_by(User.username)
    )
    return [(m, u) for m, u in rows]


def set_member_role(*, session: Session, project: Project, username: str, role: Role) -> Membership:
    user = get_user_by_username(session=session, username=username)
    membership = session.get(Membership, (project.id, user.id))
    if membership is None:
        membership = Membership(project_id=project.id, user_id=user.id, role=role.value)
        session.add(membership)
    else:
        if membership.role == Role.owner and role != Role.owner:
            _ensure_another_owner(session=session, project=project, leaving=user)
        membership.role = role.value
    session.flush()
    return membership


def remove_member(*, session: Session, project: Project, username: str) -> None:
    user = get_user_by_username(session=session, username=username)
    membership = session.get(Membership, (project.id, user.id))
    if membership is None:
        raise NotFound(f"{username!r} is not a member of this project")
    if membership.role == Role.owner:
        _ensure_another_owner(session=session, project=project, leaving=user)
    session.delete(membership)
    session.flush()


def _ensure_another_owner(*, session: Session, project: Project, leaving: User) -> None:
    owners = session.scalar(
        select(func.count()).where(
            Membership.project_id == project.id,
            Membership.role == Role.owner.value,
            Membership.user_id != leaving.id,
        )
    )
    if not owners:
        raise Conflict("a project must keep at least one owner")
