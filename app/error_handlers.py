"""Exception handlers: JSON errors for the API, HTML error pages (or sign-in) for pages."""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from app.api.errors import error_response
from app.db.session import is_busy
from app.services.errors import ServiceError
from app.store.array_store import StoreUnavailable
from app.store.sources.allowed import SourceRefused
from app.store.sources.tables import SourceError
from app.web.errors import error_page, is_page_request


def _location(loc: tuple[object, ...]) -> str:
    """`items.0`, not `body.must_link.items.list[constrained-int].0`: request parts and the
    tags pydantic gives the branches of an optional or union type are left out."""
    return ".".join(
        str(part)
        for part in loc
        if part not in ("body", "query", "path", "form", "none")
        and not (isinstance(part, str) and "[" in part)
    )


def _meaningful(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An optional field's "should be None" alternative says nothing when its value is wrong
    for another reason."""
    kept = [e for e in errors if e.get("type") != "none_required"]
    return kept or errors


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request, exc: StarletteHTTPException) -> str:
    """Every method some route serves at this path (Starlette names only the first matching
    route's, and FastAPI has one route per method)."""
    allowed = {m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip()}
    for route in request.app.router.routes:
        if isinstance(route, Mount):
            if isinstance(route.app, StaticFiles) and route.matches(request.scope)[0] is Match.FULL:
                allowed |= {"GET", "HEAD"}
            continue
        for method in _METHODS:
            if route.matches({**request.scope, "method": method})[0] is Match.FULL:
                allowed.add(method)
    return ", ".join(sorted(allowed))


BUSY_RETRY_AFTER_S = 1
OUT_OF_MEMORY_RETRY_AFTER_S = 10


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> Response:
        if is_page_request(request):
            return error_page(request, exc.status_code, exc.detail)
        return error_response(exc.status_code, exc.detail, exc.code, exc.extra)

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(request: Request, exc: StoreUnavailable) -> Response:
        health = getattr(request.app.state, "store_health", None)
        if health is not None:
            health.failed(str(exc))  # /health says so now, not after its next probe
        detail = f"the array store is unavailable, nothing was stored: {exc}"
        if is_page_request(request):
            return error_page(request, 503, detail)
        return error_response(503, detail, "store_unavailable")

    @app.exception_handler(SourceError)
    @app.exception_handler(SourceRefused)
    async def source_unreadable(request: Request, exc: Exception) -> Response:
        # A dataset read in place whose source changed, went or was closed since its import:
        # the user's data, not our store (whose health this is not).
        detail = f"the dataset's source cannot be read as it was imported: {exc}"
        if is_page_request(request):
            return error_page(request, 409, detail)
        return error_response(409, detail, "source_changed")

    @app.exception_handler(MemoryError)
    async def out_of_memory(request: Request, exc: MemoryError) -> Response:
        # What the request held is freed with it, and its transaction rolled back: the same
        # request may go through once other work is done, or a smaller one at once.
        detail = (
            "the server ran out of memory handling this request; nothing was stored "
            "(send less at once, or try again later)"
        )
        if is_page_request(request):
            response = error_page(request, 503, detail)
        else:
            response = error_response(503, detail, "out_of_memory")
        response.headers["Retry-After"] = str(OUT_OF_MEMORY_RETRY_AFTER_S)
        return response

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> Response:
        if not is_busy(exc):
            raise exc  # to the server-error handler below, which logs it: a 500
        # Another writer held the database past its busy timeout: nothing of this request was
        # committed, and the same request may simply be sent again.
        detail = "the database is busy with other writes; nothing was stored, try again"
        if is_page_request(request):
            response = error_page(request, 503, detail)
        else:
            response = error_response(503, detail, "database_busy")
        response.headers["Retry-After"] = str(BUSY_RETRY_AFTER_S)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if is_page_request(request):
            response = error_page(request, exc.status_code, str(exc.detail))
        else:
            response = error_response(exc.status_code, str(exc.detail))
        if exc.status_code == 405:
            response.headers["Allow"] = _allowed_methods(request, exc)
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        errors = [
            {"loc": _location(tuple(err.get("loc", ()))), "msg": str(err.get("msg", "invalid"))}
            for err in _meaningful(list(exc.errors()))
        ]
        detail = "; ".join(f"{e['loc']}: {e['msg']}".lstrip(": ") for e in errors)
        if is_page_request(request):
            return error_page(request, 422, detail or "invalid request")
        # The same code as a refusal the data decides (InvalidInput); `errors` says where.
        return error_response(422, detail or "invalid request", extra={"errors": errors})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # Starlette logs the exception and re-raises it after this answer is sent.
        if is_page_request(request):
            return error_page(request, 500, "internal server error")
        return error_response(500, "internal server error", "internal_error")
