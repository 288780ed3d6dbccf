from typing import Annotated

from fastapi import APIRouter, Body, status
from sqlalchemy.orm import Session

from app.api.deps import EditorAccess, SessionDep, ViewerAccess
from app.api.paging import Paging
from app.api.schemas.annotations import (
    AnnotationBatchCreate,
    AnnotationBatchRead,
    AnnotationCreate,
    AnnotationEdit,
    AnnotationRead,
    AnnotationsPage,
    UndoRedoRead,
)
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.db.models import Dataset
from app.services import annotations

router = APIRouter(
    prefix="/datasets/{dataset_id}/annotations", tags=["annotations"], responses=ERROR_RESPONSES
)


def _new_annotation(annotation_in: AnnotationCreate) -> annotations.NewAnnotation:
    return annotations.NewAnnotation(
        kind=annotation_in.kind,
        body=annotation_in.model_dump(exclude={"kind", "confidence"}),
        confidence=getattr(annotation_in, "confidence", None),
    )


@router.post("", response_model=AnnotationRead, status_code=status.HTTP_201_CREATED)
def create_annotation(
    dataset_id: Id,
    session: SessionDep,
    access: EditorAccess,
    annotation_in: Annotated[AnnotationCreate, Body()],
) -> AnnotationRead:
    """Record one expert act: a label, a must-link set, a cannot-link between two sets, or a
    boundary drawn in a view. Items are row positions 0..n_items-1."""
    new = _new_annotation(annotation_in)
    annotation = annotations.create_annotation(
        session=session,
        dataset=access.require_dataset(),
        user=access.user,
        kind=new.kind,
        body=new.body,
        confidence=new.confidence,
    )
    session.commit()
    return AnnotationRead.model_validate(annotation)


@router.post("/batch", response_model=AnnotationBatchRead, status_code=status.HTTP_201_CREATED)
def create_annotations(
    dataset_id: Id, session: SessionDep, access: EditorAccess, batch: AnnotationBatchCreate
) -> AnnotationBatchRead:
    """Record up to 100,000 annotations as one act: all are checked before any is stored (a
    refusal names the first bad one, `annotations[17]: ...`, and stores nothing); they share
    one new revision, and one undo takes them all back."""
    created = annotations.create_annotations(
        session=session,
        dataset=access.require_dataset(),
        user=access.user,
        annotations=[_new_annotation(a) for a in batch.annotations],
    )
    session.commit()
    return AnnotationBatchRead(ids=created.ids, revision=created.revision, count=len(created.ids))


@router.get("", response_model=AnnotationsPage)
def read_annotations(
    dataset_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    page: Paging,
    include_deleted: bool = False,
) -> AnnotationsPage:
    dataset = access.require_dataset()
    rows, total = annotations.list_annotations(
        session=session,
        dataset=dataset,
        limit=page.limit,
        offset=page.offset,
        include_deleted=include_deleted,
    )
    return AnnotationsPage.of(
        rows,
        total,
        page,
        revision=dataset.revision,
        can_undo=annotations.can_undo(session=session, dataset=dataset),
        can_redo=annotations.can_redo(session=session, dataset=dataset),
    )


def _committed(session: Session, dataset: Dataset, act: annotations.Act) -> UndoRedoRead:
    """Commit an undo, redo or delete and answer with the (newest) annotation it touched."""
    session.commit()
    return UndoRedoRead(
        annotation=AnnotationRead.model_validate(act.annotation),
        revision=dataset.revision,
        count=act.count,
    )


@router.post("/undo", response_model=UndoRedoRead)
def undo_annotation(dataset_id: Id, session: SessionDep, access: EditorAccess) -> UndoRedoRead:
    """Undo the newest act: soft-delete the newest live annotation, or the whole batch it was
    recorded in."""
    dataset = access.require_dataset()
    return _committed(session, dataset, annotations.undo(session=session, dataset=dataset))


@router.post("/redo", response_model=UndoRedoRead)
def redo_annotation(dataset_id: Id, session: SessionDep, access: EditorAccess) -> UndoRedoRead:
    """Restore the most recently undone act, a whole batch included (until a new act is
    made)."""
    dataset = access.require_dataset()
    return _committed(session, dataset, annotations.redo(session=session, dataset=dataset))


@router.delete("/{annotation_id:int}", response_model=UndoRedoRead)
def delete_annotation(
    dataset_id: Id, annotation_id: Id, session: SessionDep, access: EditorAccess
) -> UndoRedoRead:
    """Delete one annotation, not only the newest. A new act (it empties the redo stack); the
    annotation stays in the history (`include_deleted=true`)."""
    dataset = access.require_dataset()
    annotation = annotations.delete_annotation(
        session=session, dataset=dataset, annotation_id=annotation_id
    )
    return _committed(session, dataset, annotations.Act(annotation, 1))


@router.patch("/{annotation_id:int}", response_model=AnnotationRead)
def edit_annotation(
    dataset_id: Id,
    annotation_id: Id,
    edit: AnnotationEdit,
    session: SessionDep,
    access: EditorAccess,
) -> AnnotationRead:
    """Rename a label or change a link's confidence. The edit is a new annotation whose payload
    names the one it `replaces`; undoing the edit brings the old annotation back."""
    annotation = annotations.edit_annotation(
        session=session,
        dataset=access.require_dataset(),
        user=access.user,
        annotation_id=annotation_id,
        label=edit.label,
        confidence=edit.confidence,
    )
    session.commit()
    return AnnotationRead.model_validate(annotation)
