"""Errors a user can cause. The API turns each into a 4xx with `{"detail", "code"}`."""


class ServiceError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, detail: str, **extra: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra  # more fields for the error body, e.g. a conflict report


class InvalidInput(ServiceError):
    status_code = 422
    code = "invalid_input"


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(ServiceError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(ServiceError):
    status_code = 415
    code = "unsupported_media_type"


class NotAuthenticated(ServiceError):
    status_code = 401
    code = "not_authenticated"


class Forbidden(ServiceError):
    status_code = 403
    code = "forbidden"


class TooManyRequests(ServiceError):
    """A limit was hit; `retry_after` (whole seconds) goes out as the Retry-After header."""

    status_code = 429
    code = "too_many_requests"

    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail, retry_after=max(1, retry_after))
        self.retry_after = max(1, retry_after)
