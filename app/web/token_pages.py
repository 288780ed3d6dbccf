"""The "Sessions and tokens" page: a user's live sign-ins (browser sessions, password-flow access
tokens: issued when and to what, last used when and from where), each revocable, and their named
tokens for services, made, listed and revoked; the same services as /api/v1/auth/sessions and
/api/v1/tokens.

A new secret is shown once. Making a token answers with a redirect (post/redirect/get), so
reloading the page never makes a second token; the secret rides along in a cookie that only
this page reads, lives a minute at most, and is deleted by the page that shows it."""

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.deps import CurrentUser, SessionDep, SettingsDep
from app.services import accounts
from app.services.errors import ServiceError
from app.web.templating import templates

router = APIRouter(include_in_schema=False)

NEW_SECRET_COOKIE = "new_token_secret"


def _page(
    request: Request,
    session: SessionDep,
    user: CurrentUser,
    *,
    secret: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    context = {
        "user": user,
        "sign_ins": accounts.list_sign_ins(session=session, user=user),
        "current_token_id": request.state.token_id,
        "tokens": accounts.list_api_tokens(session=session, user=user),
        "secret": secret,
        "error": error,
    }
    response: HTMLResponse = templates.TemplateResponse(request, "tokens.html", context)
    # The page may carry a secret: never keep it in a cache.
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/tokens", response_class=HTMLResponse)
def tokens_page(request: Request, session: SessionDep, user: CurrentUser) -> HTMLResponse:
    secret = request.cookies.get(NEW_SECRET_COOKIE)
    response = _page(request, session, user, secret=secret)
    if secret is not None:
        response.delete_cookie(NEW_SECRET_COOKIE, path="/tokens")
    return response


@router.post("/tokens", response_model=None)
def create_token(
    request: Request,
    session: SessionDep,
    user: CurrentUser,
    name: Annotated[str, Form(max_length=200)],
) -> Response:
    try:
        _, secret = accounts.issue_token(
            session=session, user=user, kind="api", name=name, lifetime=None
        )
    except ServiceError as exc:
        session.rollback()
        return _page(request, session, user, error=exc.detail)
    session.commit()
    response = RedirectResponse("/tokens", status_code=303)
    response.set_cookie(
        NEW_SECRET_COOKIE,
        secret,
        max_age=60,
        path="/tokens",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/tokens/{token_id}/revoke", response_model=None)
def revoke_token(
    token_id: int, request: Request, session: SessionDep, user: CurrentUser
) -> Response:
    try:
        accounts.revoke_token(session=session, user=user, token_id=token_id)
    except ServiceError as exc:
        session.rollback()
        return _page(request, session, user, error=exc.detail)
    session.commit()
    return RedirectResponse("/tokens", status_code=303)


@router.post("/sessions/{token_id}/revoke", response_model=None)
def revoke_sign_in(
    token_id: int, request: Request, session: SessionDep, settings: SettingsDep, user: CurrentUser
) -> Response:
    """Sign out one session or access token; the page's own session signs this browser out."""
    try:
        token = accounts.revoke_sign_in(session=session, user=user, token_id=token_id)
    except ServiceError as exc:
        session.rollback()
        return _page(request, session, user, error=exc.detail)
    session.commit()
    if token.id != request.state.token_id:
        return RedirectResponse("/tokens", status_code=303)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(settings.session_cookie_name, path="/")
    return response
