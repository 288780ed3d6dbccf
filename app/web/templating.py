"""Jinja2 templates with autoescape and content-hashed static URLs."""

import hashlib
from functools import lru_cache
from pathlib import Path

from fastapi.templating import Jinja2Templates

from app import __version__

APP_DIR = Path(__file__).resolve().parent.parent
STATIC_DIR = APP_DIR / "static"
TEMPLATES_DIR = APP_DIR / "templates"


@lru_cache(maxsize=256)
def static_url(path: str) -> str:
    """`/static/<path>?v=<hash>`: browsers may cache forever, a changed file gets a new URL."""
    digest = hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:10]
    return f"/static/{path}?v={digest}"


templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
templates.env.globals["static_url"] = static_url
templates.env.globals["app_version"] = __version__
