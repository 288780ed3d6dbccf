from typing import Annotated, Literal

from fastapi import APIRouter, Query

from app.api.deps import SessionDep, ViewerAccess
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.api.schemas.suggestions import RegionRead, SuggestionRead, SuggestionsRead
from app.services.suggestions import suggest

router = APIRouter(tags=["suggestions"], responses=ERROR_RESPONSES)

MAX_SUGGESTIONS = 100


@router.get("/datasets/{dataset_id}/suggestions", response_model=SuggestionsRead)
def read_suggestions(
    dataset_id: Id,
    session: SessionDep,
    access: ViewerAccess,
    kind: Literal["pairs", "items"] = "pairs",
    n: Annotated[int, Query(ge=1, le=MAX_SUGGESTIONS)] = 5,
    run_id: Id | None = None,
) -> SuggestionsRead:
    """The questions whose answers would most change the latest finished run (or `run_id`):
    `pairs` asks "same or different?", `items` asks for a label. Questions already answered by
    hard annotations are never asked; the same run and annotations give the same questions.
    409 when the dataset has no finished run to reason from."""
    dataset = access.require_dataset()
    found = suggest(session=session, dataset=dataset, kind=kind, n=n, run_id=run_id)
    return SuggestionsRead(
        run_id=found.run.id,
        run_revision=found.run.annotation_revision,
        revision=found.revision,
        stale=found.run.annotation_revision != found.revision,
        items=[
            SuggestionRead(
                kind=q.kind,
                items=list(q.items),
                clusters=list(q.clusters),
                score=q.score,
                reason=q.reason,
                regions=None
                if found.regions is None
                else [RegionRead.model_validate(r, from_attributes=True) for r in found.regions[k]],
            )
            for k, q in enumerate(found.questions)
        ],
    )
