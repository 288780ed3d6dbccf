"""The JSON API under /api/v1."""

from fastapi import APIRouter

from app.api.routes import auth, datasets, health, projects, tokens, users

api_router = APIRouter(prefix="/api/v1")
for module in (health, auth, users, tokens, projects, datasets):
    api_router.include_router(module.router)
