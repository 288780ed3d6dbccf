"""Refuse upload bodies the server should not read: over the size limit (by Content-Length
before a byte is read, and counted as a chunked body streams in, never spooled past it), and
multipart bodies sent without any credentials (401 before the body is read)."""

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import error_response

# Multipart framing and the small form fields travel beside the file itself.
_ENVELOPE_BYTES = 1024 * 1024


class UploadLimitMiddleware:
    def __init__(self, app: ASGIApp, max_upload_bytes: int, cookie_name: str) -> None:
        self.app = app
        self.limit = max_upload_bytes + _ENVELOPE_BYTES
        self.cookie = cookie_name.encode()

    def _too_large(self, size: str) -> str:
        limit = self.limit - _ENVELOPE_BYTES
        return f"the request has {size} bytes; uploads are limited to {limit:,} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await error_response(413, self._too_large(f"{int(length):,}"))(scope, receive, send)
            return
        if _is_multipart(headers) and not self._has_credentials(headers):
            # Every upload route needs a signed-in user; without any credential the answer is
            # 401 whatever the body holds, so it is not read (or spooled to disk) first.
            refusal = "sign in first: send a bearer token or a session cookie"
            await error_response(401, refusal, "not_authenticated")(scope, receive, send)
            return
        await self.app(scope, self._counted(receive), send)

    def _has_credentials(self, headers: dict[bytes, bytes]) -> bool:
        if headers.get(b"authorization", b"").strip():
            return True
        cookies = headers.get(b"cookie", b"")
        return any(part.strip().startswith(self.cookie + b"=") for part in cookies.split(b";"))

    def _counted(self, receive: Receive) -> Receive:
        """``receive`` that counts the body as it streams in (a chunked body has no
        Content-Length) and stops it at the limit: the route's form parsing gets a 413."""
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, self._too_large(f"more than {self.limit:,}"))
            return message

        return counted


def _is_multipart(headers: dict[bytes, bytes]) -> bool:
    return headers.get(b"content-type", b"").lower().startswith(b"multipart/form-data")
