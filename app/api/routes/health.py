from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import text

from app import __version__
from app.api.deps import SessionDep

router = APIRouter(prefix="/health", tags=["health"])


@router.get("")
def read_health(request: Request, session: SessionDep) -> dict[str, Any]:
    """`status` is about this server and its database; `jobs` says where runs execute, e.g.
    that they wait for an unreachable Dask scheduler (the server itself still answers);
    `array_store` whether the store holding the arrays was usable at start-up (if not, why:
    uploads and runs then get 503 until it is fixed and the server restarted)."""
    session.execute(text("SELECT 1"))
    problem = getattr(request.app.state, "array_store_problem", None)
    return {
        "status": "ok",
        "version": __version__,
        "jobs": request.app.state.executor.status(),
        "array_store": {"status": "ok"}
        if problem is None
        else {"status": "unavailable", "detail": problem},
    }
