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
    `array_store` whether the store holding the arrays is usable, as last seen by a write or
    a probe `checked_s_ago` seconds ago (if not, why: uploads and runs then get 503 until it
    is mended)."""
    session.execute(text("SELECT 1"))
    problem, age = request.app.state.store_health.current()
    store: dict[str, Any] = {"status": "ok" if problem is None else "unavailable"}
    if problem is not None:
        store["detail"] = problem
    store["checked_s_ago"] = round(age, 1)
    return {
        "status": "ok",
        "version": __version__,
        "jobs": request.app.state.executor.status(),
        "array_store": store,
    }
