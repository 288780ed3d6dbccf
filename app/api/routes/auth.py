from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.security import OAuth2PasswordRequestForm

from app.api.deps import (
    CurrentUser,
    SessionDep,
    SettingsDep,
    client_of,
    oauth2_scheme,
    request_secret,
)
from app.api.paging import Paging
from app.api.schemas.accounts import SignInRead, SignInsPage, TokenRead, UserRead
from app.api.schemas.common import ERROR_RESPONSES, RATE_LIMITED, Id
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
        address=client_of(request).address,
        policy=ThrottlePolicy.from_settings(settings),
    )
    _, secret = accounts.issue_token(
        session=session,
        user=user,
        kind="access",
        name="oauth2 password flow",
        lifetime=timedelta(minutes=settings.access_token_lifetime_minutes),
        client=client_of(request),
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


@router.get("/sessions", response_model=SignInsPage)
def read_sign_ins(
    request: Request, session: SessionDep, user: CurrentUser, page: Paging
) -> SignInsPage:
    """Your live browser sessions and password-flow access tokens (issued when and to which
    address and browser, last used when and from where), most recently used first; `current`
    marks the one this request was made with. Named API tokens are under `/tokens`."""
    current = request.state.token_id
    rows = [
        SignInRead.model_validate(token).model_copy(update={"current": token.id == current})
        for token in accounts.list_sign_ins(session=session, user=user)
    ]
    return SignInsPage.window(rows, page)


@router.delete(
    "/sessions/{token_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response
)
def revoke_sign_in(
    token_id: Id, request: Request, session: SessionDep, settings: SettingsDep, user: CurrentUser
) -> Response:
    """Sign out one of your sessions or access tokens (say, a browser left signed in
    elsewhere); it gets 401 from then on. Your own current one too: then, as `/logout`, its
    cookie is cleared."""
    token = accounts.revoke_sign_in(session=session, user=user, token_id=token_id)
    session.commit()
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    if token.id == request.state.token_id and token.kind == "session":
        response.delete_cookie(settings.session_cookie_name, path="/")
    return response
