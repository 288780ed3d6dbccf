"""/docs (Swagger UI) and /redoc (ReDoc) render every operation from the vendored copies, with
every request to anything but the app refused (no CDN, no web fonts, no validator badge) and
no console error, which includes any Content-Security-Policy violation."""

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Page, Route

pytestmark = pytest.mark.browser


@pytest.fixture
def offline_page(page: Page, live_server: str) -> Iterator[tuple[Page, list[str]]]:
    """The page with the network cut off beyond the app; yields the refused URLs."""
    own = urlsplit(live_server).netloc
    refused: list[str] = []

    def only_the_app(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == own or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    page.context.route("**/*", only_the_app)
    yield page, refused


def _operation_ids(live_server: str) -> list[str]:
    schema = httpx.get(f"{live_server}/openapi.json", timeout=30).json()
    return [op["operationId"] for path in schema["paths"].values() for op in path.values()]


@pytest.mark.parametrize(
    ("path", "operation", "one_operation"),
    [
        # Swagger UI: a block per operation, named by tag and operation id.
        ("/docs", ".opblock", "[id$='-runs-create']"),
        (
            "/redoc",
            "[data-section-id^='operation/']",
            "[data-section-id='operation/datasets-upload']",
        ),
    ],
)
def test_api_docs_render_every_operation_offline(
    offline_page: tuple[Page, list[str]],
    live_server: str,
    path: str,
    operation: str,
    one_operation: str,
) -> None:
    page, refused = offline_page
    ids = _operation_ids(live_server)
    page.goto(path)
    page.wait_for_selector(operation, timeout=30_000)
    assert page.locator(operation).count() == len(ids)
    page.locator(one_operation).first.wait_for()
    assert refused == []
