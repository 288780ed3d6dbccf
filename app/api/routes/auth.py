from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.security import OAuth2PasswordRequestForm

from app.api.deps import CurrentUser, SessionDep, SettingsDep, oauth2_scheme, request_secret
from app.api.schemas.accounts import TokenRead, UserRead
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED
from app.services import accounts
from app.services.login_throttle import ThrottlePolicy

router = APIRouter(prefix="/auth", tags=["auth"], responses=ERROR_RESPONSES)


@router.post("/token", response_model=TokenRead, responses=RATE_LIMITED)
def create_access_token(
    form: Annotated[OAuth2PasswordRequestForm, Depends()],
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
) -> TokenRead:
    """OAuth2 password flow: exchange a username and password for a bearer token.

    Throttled: after repeated failures for a username or from an address, 429 with
    Retry-After."""
    user = accounts.sign_in(
        session=session,
        username=form.username,
        password=form.password,
        address=request.client.host if request.client else None,
        policy=ThrottlePolicy.from_settings(settings),
    )
    _, secret = accounts.issue_token(
        session=session,
        user=user,
        kind="access",
        name="oauth2 password flow",
        lifetime=timedelta(minutes=settings.access_token_lifetime_minutes),
    )
    session.commit()
    return TokenRead(access_token=secret)


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def logout(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
    bearer: Annotated[str | None, Depends(oauth2_scheme)],
) -> Response:
    """Revoke the credential this request was made with (the bearer token, or else the session
    cookie, which is also cleared); it gets 401 from then on."""
    secret = request_secret(request, bearer)
    assert secret is not None  # CurrentUser found a user by it
    accounts.revoke_secret(session=session, secret=secret)
    session.commit()
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    if not bearer:
        response.delete_cookie(settings.session_cookie_name, path="/")
    return response


@router.get("/me", response_model=UserRead)
def read_me(user: CurrentUser) -> UserRead:
    return UserRead.model_validate(user)
