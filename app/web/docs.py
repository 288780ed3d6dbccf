"""/docs (Swagger UI) and /redoc (ReDoc) from the vendored copies in app/static/vendor, so the
API reference works offline and under the docs CSP (app/web/security.py: scripts from this
server only)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.templating import templates

router = APIRouter(include_in_schema=False)

SPEC_URL = "/openapi.json"


def _page(request: Request, title: str, **assets: str | None) -> HTMLResponse:
    response: HTMLResponse = templates.TemplateResponse(
        request, "api_docs.html", {"title": title, "spec_url": SPEC_URL, **assets}
    )
    return response


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request) -> HTMLResponse:
    return _page(
        request,
        "Clustering workbench API - Swagger UI",
        stylesheet="vendor/swagger-ui/swagger-ui.css",
        library="vendor/swagger-ui/swagger-ui-bundle.js",
        starter="js/docs/swagger-init.js",
    )


@router.get("/redoc", response_class=HTMLResponse)
def redoc(request: Request) -> HTMLResponse:
    return _page(
        request,
        "Clustering workbench API - ReDoc",
        stylesheet=None,
        library="vendor/redoc/redoc.standalone.js",
        starter="js/docs/redoc-init.js",
    )
