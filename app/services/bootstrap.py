"""First start: an admin account and a "Demo" project with datasets that ship offline."""

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.models import Project, User
from app.services import accounts, datasets, image_uploads, projects, security
from app.services.demo_data import demo_image, demo_tables

log = logging.getLogger(__name__)
DEMO_PROJECT = "Demo"


def ensure_admin(*, session: Session, settings: Settings) -> User:
    existing = session.scalar(select(User).where(User.username == settings.admin_username))
    if existing is not None:
        return existing
    password = settings.admin_password or security.generate_password()
    admin = accounts.create_user(
        session=session, username=settings.admin_username, password=password, is_admin=True
    )
    if not settings.admin_password:
        # Shown once: only the hash is stored.
        print(
            "\n" + "=" * 64 + f"\n  Created admin account\n    username: {admin.username}\n"
            f"    password: {password}\n  (shown only now; set ADMIN_PASSWORD to choose it)\n"
            + "=" * 64
            + "\n",
            flush=True,
        )
    return admin


def ensure_demo_project(*, session: Session, settings: Settings, owner: User) -> Project | None:
    if session.scalar(select(Project).where(Project.name == DEMO_PROJECT)) is not None:
        return None
    project = projects.create_project(
        session=session,
        owner=owner,
        name=DEMO_PROJECT,
        description="Datasets that ship with scikit-learn and scikit-image.",
    )
    for name, table in demo_tables():
        datasets.create_table_dataset(
            session=session,
            project=project,
            user=owner,
            name=name,
            table=table,
            source_filename=f"sklearn.datasets.load_{name}",
            chunk_rows=settings.chunk_rows,
            ground_truth_column="class",
        )
    name, image = demo_image()
    image_uploads.create_image_dataset(
        session=session,
        project=project,
        user=owner,
        name=name,
        image=image,
        source_filename=f"skimage.data.{name}",
    )
    log.info("loaded the demo project")
    return project


def bootstrap(*, session: Session, settings: Settings, store_usable: bool = True) -> None:
    admin = ensure_admin(session=session, settings=settings)
    if settings.load_demo_data and not store_usable:
        log.warning("the demo data is not loaded: the array store is not usable")
    elif settings.load_demo_data:
        ensure_demo_project(session=session, settings=settings, owner=admin)
    session.commit()
