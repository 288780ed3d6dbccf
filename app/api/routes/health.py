from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import text

from app import __version__
from app.api.deps import SessionDep

router = APIRouter(prefix="/health", tags=["health"])


@router.get("")
def read_health(request: Request, session: SessionDep) -> dict[str, Any]:
    """`status` is about this server and its database; `jobs` says where runs execute, e.g.
    that they wait for an unreachable Dask scheduler (the server itself still answers)."""
    session.execute(text("SELECT 1"))
    return {"status": "ok", "version": __version__, "jobs": request.app.state.executor.status()}
