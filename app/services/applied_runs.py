"""The runs a model was applied to (a collection): list them with their progress, cancel
those still going, and export their masks as one ZIP."""

import io
import re
import zipfile
from collections.abc import Iterable

import numpy as np
import tifffile
from PIL import Image
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Dataset, Role, Run, RunResult, User
from app.services.errors import Conflict, InvalidInput
from app.services.projects import role_in_project
from app.services.runs import ACTIVE, request_cancel

MASK_FORMATS = ("png", "tiff")


def applied_runs(*, session: Session, source: Run, user: User) -> list[Run]:
    """Every run `source` was applied to whose image the user may see, in the order queued."""
    rows = session.scalars(select(Run).where(Run.source_run_id == source.id).order_by(Run.id)).all()
    return _visible(session, user, rows, Role.viewer)


def cancel_applied(*, session: Session, source: Run, user: User) -> list[Run]:
    """Stop every queued or running apply of `source` on images the user edits."""
    active = [
        r for r in applied_runs(session=session, source=source, user=user) if r.status in ACTIVE
    ]
    editable = _visible(session, user, active, Role.editor)
    return [request_cancel(session=session, run=run) for run in editable]


def masks_zip(*, session: Session, source: Run, user: User, fmt: str) -> bytes:
    """One mask per image (its latest finished apply of `source`), pixel value = cluster id
    as in `source`'s own mask, named ``<dataset id>-<dataset name>.<fmt>``."""
    if fmt not in MASK_FORMATS:
        raise InvalidInput(f"format must be one of {list(MASK_FORMATS)}, got {fmt!r}")
    latest: dict[int, Run] = {}
    for run in applied_runs(session=session, source=source, user=user):
        if run.status == "succeeded":
            latest[run.dataset_id] = run
    if not latest:
        raise Conflict(f"no apply of run {source.id} has finished yet; nothing to export")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for dataset_id, run in sorted(latest.items()):
            result = session.get(RunResult, run.id)
            dataset = session.get(Dataset, dataset_id)
            if result is None or result.mask is None or dataset is None:
                continue
            name = f"{dataset_id}-{_file_stem(dataset.name)}.{fmt}"
            archive.writestr(name, result.mask if fmt == "png" else _tiff(result.mask))
    return out.getvalue()


def _visible(session: Session, user: User, runs: Iterable[Run], minimum: Role) -> list[Run]:
    runs = list(runs)
    projects = {
        d.id: d.project_id
        for d in session.scalars(
            select(Dataset).where(Dataset.id.in_({r.dataset_id for r in runs}))
        )
    }
    allowed: dict[int, bool] = {}
    for project_id in set(projects.values()):
        role = role_in_project(session=session, user=user, project_id=project_id)
        allowed[project_id] = role is not None and role.allows(minimum)
    return [r for r in runs if allowed.get(projects.get(r.dataset_id, -1), False)]


def _file_stem(name: str) -> str:
    """A dataset's name made safe as a file name (no paths, no odd characters)."""
    stem = re.sub(r"\.(png|jpe?g|tiff?|ome\.tiff?)$", "", name, flags=re.IGNORECASE)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "image"


def _tiff(png: bytes) -> bytes:
    with Image.open(io.BytesIO(png)) as image:
        mask = np.asarray(image)
    out = io.BytesIO()
    tifffile.imwrite(out, mask, compression="zlib")
    return out.getvalue()
