from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.security import OAuth2PasswordRequestForm

from app.api.deps import CurrentUser, SessionDep, SettingsDep
from app.api.schemas.accounts import TokenRead, UserRead
from app.api.schemas.common import ERROR_RESPONSES
from app.services import accounts

router = APIRouter(prefix="/auth", tags=["auth"], responses=ERROR_RESPONSES)


@router.post("/token", response_model=TokenRead)
def create_access_token(
    form: Annotated[OAuth2PasswordRequestForm, Depends()],
    session: SessionDep,
    settings: SettingsDep,
) -> TokenRead:
    """OAuth2 password flow: exchange a username and password for a bearer token."""
    user = accounts.authenticate(session=session, username=form.username, password=form.password)
    _, secret = accounts.issue_token(
        session=session,
        user=user,
        kind="access",
        name="oauth2 password flow",
        lifetime=timedelta(minutes=settings.access_token_lifetime_minutes),
    )
    session.commit()
    return TokenRead(access_token=secret)


@router.get("/me", response_model=UserRead)
def read_me(user: CurrentUser) -> UserRead:
    return UserRead.model_validate(user)
