from fastapi import APIRouter, status

from app.api.deps import CurrentUser, SessionDep
from app.api.paging import Paging
from app.api.schemas.accounts import ApiTokenCreate, ApiTokenCreated, ApiTokenRead, ApiTokensPage
from app.api.schemas.common import ERROR_RESPONSES, Id
from app.services import accounts

router = APIRouter(prefix="/tokens", tags=["tokens"], responses=ERROR_RESPONSES)


@router.post("", response_model=ApiTokenCreated, status_code=status.HTTP_201_CREATED)
def create_api_token(
    token_in: ApiTokenCreate, session: SessionDep, user: CurrentUser
) -> ApiTokenCreated:
    """A named, long-lived token for a service. The secret is returned once, then only its hash
    is kept."""
    token, secret = accounts.issue_token(
        session=session, user=user, kind="api", name=token_in.name, lifetime=None
    )
    session.commit()
    return ApiTokenCreated(**ApiTokenRead.model_validate(token).model_dump(), token=secret)


@router.get("", response_model=ApiTokensPage)
def read_api_tokens(
    session: SessionDep,
    user: CurrentUser,
    page: Paging,
) -> ApiTokensPage:
    tokens = accounts.list_api_tokens(session=session, user=user)
    return ApiTokensPage.window(tokens, page)


@router.delete("/{token_id}", response_model=ApiTokenRead)
def revoke_api_token(token_id: Id, session: SessionDep, user: CurrentUser) -> ApiTokenRead:
    token = accounts.revoke_token(session=session, user=user, token_id=token_id)
    session.commit()
    return ApiTokenRead.model_validate(token)
