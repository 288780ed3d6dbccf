"""Every API error leaves as `ErrorRead` (`{"detail": "...", "code": "...", ...}`) with the
right status."""

from fastapi.responses import JSONResponse

_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "too_many_requests",
    500: "internal_error",
}


def error_response(
    status: int, detail: str, code: str | None = None, extra: dict[str, object] | None = None
) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    retry_after = (extra or {}).get("retry_after")  # a limit says when to come back
    if status == 429 and isinstance(retry_after, int):
        headers["Retry-After"] = str(retry_after)
    return JSONResponse(
        {"detail": detail, "code": code or _CODES.get(status, "error"), **(extra or {})},
        status_code=status,
        headers=headers,
    )
