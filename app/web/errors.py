"""Errors on pages: HTML error pages chosen by status, and a redirect to sign in."""

from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.web.templating import templates


def is_page_request(request: Request) -> bool:
    return not request.url.path.startswith(("/api/", "/docs", "/openapi", "/static/"))


def login_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)


def error_page(request: Request, status: int, detail: str) -> Response:
    if status == 401:
        return login_redirect(request)
    response: HTMLResponse = templates.TemplateResponse(
        request,
        "error.html",
        {"status": status, "detail": detail, "user": None},
        status_code=status,
    )
    return response
