"""Cross-site request refusal and security headers, for every request and response.

`OriginCheckMiddleware`: a state-changing request (any method but GET, HEAD, OPTIONS, TRACE)
that is not authenticated by a bearer token must come from this server's own origin. Its
`Origin` header (or, without one, the origin of its `Referer`) must equal the scheme://host:port
the request was sent to, or one of `TRUSTED_ORIGINS`; a request carrying the session cookie
with neither header is refused too. Browsers send `Origin` on every cross-origin POST and on
same-origin fetches and form posts, so the app's own pages and scripts pass unchanged, while a
page on another origin (even another port of the same host, which SameSite cookies count as the
same site) cannot act with the user's cookie. Refusals are 403 before the route runs, so nothing
is read or written. Bearer requests are exempt: a browser never attaches those by itself, and a
cross-origin page cannot add the header without a CORS preflight, which this app never grants.

`SecurityHeadersMiddleware`: Content-Security-Policy (unless the route set its own),
X-Frame-Options, X-Content-Type-Options and Referrer-Policy on every response.
"""

from urllib.parse import urlsplit

from fastapi import Request
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import error_response
from app.web.errors import error_page, is_page_request

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _csp(**directives: str) -> str:
    policy = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self'",
        "font-src": "'self'",
        "connect-src": "'self'",
        "worker-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'none'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    policy.update({name.replace("_", "-"): value for name, value in directives.items()})
    return "; ".join(f"{name} {value}" for name, value in policy.items())


# Every page: scripts, styles and images from this server only; no inline code at all.
CONTENT_SECURITY_POLICY = _csp()
# The workspace's vendored regl-scatterplot: regl compiles its draw commands with the Function
# constructor ('unsafe-eval'; without it the plot never draws), and from 1,000,000 points the
# scatterplot builds its spatial index in a Worker made from a blob: URL. Styles stay 'self':
# only its lasso-initiator and long-press options (off in plot.js) would add a <style> element.
WORKSPACE_CONTENT_SECURITY_POLICY = _csp(
    script_src="'self' 'unsafe-eval'",
    worker_src="'self' blob:",
)
# /docs (Swagger UI) and /redoc (ReDoc), vendored and started by script files: scripts stay
# 'self'. Both style their elements inline (React style attributes, ReDoc's styled-components)
# and show data: images (Swagger UI's icons); ReDoc builds its search index in a blob: Worker.
DOCS_CONTENT_SECURITY_POLICY = _csp(
    style_src="'self' 'unsafe-inline'",
    img_src="'self' data:",
    worker_src="'self' blob:",
)
_DOCS_PATHS = ("/docs", "/redoc")

SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Same-origin requests keep the full Referer (the Origin check's fallback); other sites
    # get none, so dataset and project ids in URLs do not leak.
    "Referrer-Policy": "same-origin",
}


def origin_of(url: str) -> str | None:
    """`scheme://host:port` of a URL or an Origin header value (port always spelled out), or
    None for `null` and anything unparsable."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname  # lower-cased, IPv6 brackets removed
    if not scheme or not host:
        return None
    port = port or _DEFAULT_PORTS.get(scheme)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def server_origin(request: Request) -> str | None:
    """The origin this request was addressed to: its scheme and Host header."""
    host = request.headers.get("host")
    if not host and request.url.hostname:
        host = request.url.netloc
    return origin_of(f"{request.url.scheme}://{host}") if host else None


def _has_bearer(request: Request) -> bool:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(credentials.strip())


def cross_site_refusal(request: Request, cookie_name: str, trusted: list[str]) -> str | None:
    """Why this request must be refused, or None if it may proceed."""
    if request.method.upper() in SAFE_METHODS or _has_bearer(request):
        return None
    claimed = request.headers.get("origin")
    source = "Origin"
    if claimed is None and request.headers.get("referer"):
        claimed, source = request.headers["referer"], "Referer"
    if claimed is None:
        if cookie_name in request.cookies:
            return (
                "cross-site request refused: a state-changing request made with the session "
                "cookie must carry an Origin or Referer header naming this server; API clients "
                "should send a bearer token instead"
            )
        return None
    own = server_origin(request)
    origin = origin_of(claimed)
    allowed = {o for o in (own, *(origin_of(t) for t in trusted)) if o}
    if origin is None or origin not in allowed:
        shown = origin or claimed.strip()[:100] or "(empty)"
        return (
            f"cross-site request refused: its {source} is {shown}, not this server "
            f"({own or 'unknown'}); state-changing requests must come from the server's own "
            "pages or carry a bearer token"
        )
    return None


class OriginCheckMiddleware:
    def __init__(self, app: ASGIApp, cookie_name: str, trusted_origins: list[str]) -> None:
        self.app = app
        self.cookie_name = cookie_name
        self.trusted_origins = trusted_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            reason = cross_site_refusal(request, self.cookie_name, self.trusted_origins)
            if reason is not None:
                if is_page_request(request):
                    response = error_page(request, 403, reason)
                else:
                    response = error_response(403, reason, "cross_site_request")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        docs = path in _DOCS_PATHS or path.startswith("/docs/")
        policy = DOCS_CONTENT_SECURITY_POLICY if docs else CONTENT_SECURITY_POLICY

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "content-security-policy" not in headers:
                    headers["Content-Security-Policy"] = policy
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
