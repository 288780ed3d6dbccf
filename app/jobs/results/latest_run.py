"""The dataset's latest finished run that fitted a model itself: what a new run follows.

A re-run numbers its clusters after it (``numbering``) and, when asked, continues its mixture
(``continuation``). Runs that apply another run's model fitted nothing of their own.
"""

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.db.models import Run, RunResult


def latest_fitted(
    session: Session,
    run: Run,
    *columns: InstrumentedAttribute[Any],
    same_algorithm: bool = False,
) -> tuple[Any, ...] | None:
    """(run id, ``columns`` of its result) of the dataset's most recently finished fitted run
    other than ``run``; with ``same_algorithm``, only runs of ``run``'s algorithm."""
    query = (
        select(Run.id, *columns)
        .join(RunResult, RunResult.run_id == Run.id)
        .where(
            Run.dataset_id == run.dataset_id,
            Run.id != run.id,
            Run.status == "succeeded",
            Run.source_run_id.is_(None),
        )
    )
    if same_algorithm:
        query = query.where(Run.algorithm == run.algorithm)
    row = session.execute(query.order_by(Run.finished_at.desc(), Run.id.desc()).limit(1)).first()
    return None if row is None else tuple(row)
