import numpy as np
from fastapi import APIRouter

from app.api.deps import SessionDep, ViewerAccess
from app.api.schemas.annotations import ConflictRead, SideInformationRead
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.services.side_information import compile_for_dataset
from app.sideinfo import SideInformation

router = APIRouter(tags=["side information"], responses=ERROR_RESPONSES)


def _chunklet_lists(info: SideInformation) -> list[list[int]]:
    """Chunklets of 2 or more items (most items are alone; never split a million singletons)."""
    chunklets = info.components()
    if chunklets.size == 0:
        return []
    counts = np.bincount(chunklets)
    linked = np.flatnonzero(counts[chunklets] >= 2)
    order = linked[np.argsort(chunklets[linked], kind="stable")]
    ids = chunklets[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.empty(0, int)
    return [g.tolist() for g in np.split(order, starts[1:])] if len(ids) else []


@router.get("/datasets/{dataset_id}/side-information", response_model=SideInformationRead)
def read_side_information(
    dataset_id: Id, session: SessionDep, access: ViewerAccess
) -> SideInformationRead:
    """The live annotations at the current revision, compiled into what the engine uses, with
    a conflict report that names the annotations behind each conflict."""
    dataset = access.require_dataset()
    info = compile_for_dataset(session=session, dataset=dataset)
    return SideInformationRead(
        dataset_id=dataset.id,
        revision=info.revision,
        n_items=info.n_items,
        n_labeled=info.n_labeled,
        label_names=info.label_names,
        labeled_items={
            name: np.flatnonzero(info.labels == code).tolist()
            for code, name in enumerate(info.label_names)
        },
        chunklets=_chunklet_lists(info),
        must_link=[tuple(p) for p in info.must_link.tolist()],
        must_link_confidence=info.must_link_confidence.tolist(),
        cannot_link=[tuple(p) for p in info.cannot_link.tolist()],
        cannot_link_confidence=info.cannot_link_confidence.tolist(),
        side_scores=None if info.side_scores is None else info.side_scores.tolist(),
        boundary_labels=info.boundary_labels,
        boundary_annotation_id=info.boundary_annotation_id,
        conflicts=[ConflictRead(**c.as_dict()) for c in info.conflicts],
        notes=info.notes,
    )
