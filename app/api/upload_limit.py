"""Refuse request bodies over the upload limit before they are read (by Content-Length)."""

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import error_response

# Multipart framing and the small form fields travel beside the file itself.
_ENVELOPE_BYTES = 1024 * 1024


class UploadLimitMiddleware:
    def __init__(self, app: ASGIApp, max_upload_bytes: int) -> None:
        self.app = app
        self.limit = max_upload_bytes + _ENVELOPE_BYTES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length")
            if length is not None and length.isdigit() and int(length) > self.limit:
                response = error_response(
                    413,
                    f"the request has {int(length):,} bytes; uploads are limited to "
                    f"{self.limit - _ENVELOPE_BYTES:,} bytes",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
