"""Route arguments for operations that answer with a file or a stream instead of JSON: the
response class, and the media types the published OpenAPI document declares for 200."""

from typing import Any

from fastapi import Response
from fastapi.responses import StreamingResponse


def file_response(*media_types: str, streamed: bool = False) -> dict[str, Any]:
    return {
        "response_class": StreamingResponse if streamed else Response,
        "responses": {200: {"content": {media: {} for media in media_types}}},
    }
