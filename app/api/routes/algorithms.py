from fastapi import APIRouter

from app.api.deps import CurrentUser
from app.api.paging import Paging
from app.api.schemas.common import ERROR_RESPONSES
from app.api.schemas.runs import AlgorithmRead, AlgorithmsPage
from app.jobs.algorithms import ALGORITHMS

router = APIRouter(prefix="/algorithms", tags=["runs"], responses=ERROR_RESPONSES)


@router.get("", response_model=AlgorithmsPage)
def read_algorithms(_user: CurrentUser, page: Paging) -> AlgorithmsPage:
    """Every algorithm, the side information it uses, and the JSON Schema of its parameters
    (the same definition that validates run requests)."""
    items = [
        AlgorithmRead(
            id=a.id,
            name=a.name,
            summary=a.summary,
            uses=list(a.uses),
            side_information_mapping=a.side_information_mapping,
            parameters=a.parameters_schema(),
        )
        for a in ALGORITHMS.values()
    ]
    return AlgorithmsPage.window(items, page)
