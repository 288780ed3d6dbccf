"""The JSON API under /api/v1."""

from fastapi import APIRouter

from app.api.routes import (
    algorithms,
    annotations,
    applied_runs,
    auth,
    collections,
    datasets,
    deep_zoom,
    exports,
    health,
    imports,
    picture_display,
    projects,
    runs,
    side_information,
    suggestions,
    tokens,
    users,
    views,
)

api_router = APIRouter(prefix="/api/v1")
for module in (
    health,
    auth,
    users,
    tokens,
    projects,
    datasets,
    imports,
    deep_zoom,
    picture_display,
    collections,
    views,
    annotations,
    side_information,
    algorithms,
    runs,
    applied_runs,
    suggestions,
    exports,
):
    api_router.include_router(module.router)
