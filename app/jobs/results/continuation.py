"""Warm starts: a run whose parameters ask for one (``warm_start``) continues the dataset's
latest finished run of the same algorithm (PPC its mixture, CEC-IB its partition) instead of
only drawing new starts.

An expert re-runs after every few annotations (live mode after each). Fresh fits land in
another local optimum every so often: on digits, re-running PPC from scratch after every five
answered questions moved 11.0 % of the items to another cluster per re-run, and more than 5 % in
58 % of the re-runs; continued fits moved 4.9 % and 24 %, at the same ARI (docs/ppc.md, "Warm
starts"); CEC-IB re-runs after every five labels moved 21.7 % and 93 % fresh, 13.1 % and 58 %
continued (docs/cec-ib.md, "Warm starts").
The earlier run's ``cluster_params`` (weights, means, covariances and their model) and labels
hold what is continued; the run records what it continued in ``metrics.warm_start``. Fresh
starts are drawn beside the continued fit only when it agrees with the annotations less than the
earlier run did (``agreement`` in its ``cluster_params``; app/engine/core/fresh_starts.py): they
cost most of a re-run and, when it agrees as well, can only redraw the picture.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Run, RunResult
from app.jobs.results.latest_run import latest_fitted
from app.store.run_arrays import read_labels


@dataclass(frozen=True)
class Previous:
    """An earlier run's mixture and partition, as its result stored them."""

    run_id: int
    cluster_params: dict[str, Any]
    labels: NDArray[np.int32]  # one cluster per item

    @property
    def agreement(self) -> float | None:
        """The share of the annotations the run's fit agreed with (the estimator's
        ``agreement_``): a continued fit that matches it draws no fresh starts. None for runs
        stored before runs kept it."""
        value = self.cluster_params.get("agreement")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if 0 <= value <= 1 else None

    @property
    def weight_search(self) -> tuple[int, int] | None:
        """CEC-IB: the labeled weight its search chose and how many labeled items it had."""
        weight = self.cluster_params.get("labeled_weight")
        searched = self.cluster_params.get("weight_searched_with")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (weight, searched)):
            return None
        assert isinstance(weight, int) and isinstance(searched, int)
        return (weight, searched) if weight >= 1 and searched >= 0 else None

    @property
    def mixture(self) -> tuple[Any, Any, Any, int | None] | None:
        """Its weights, means and covariances (and labeled weight), for a data-parallel fit to
        continue (``CECIB.start_from_mixture``); None when the result did not keep them."""
        found = [self.cluster_params.get(k) for k in ("weights", "means", "covariances")]
        if any(not isinstance(v, list) or not v for v in found):
            return None
        weight = self.cluster_params.get("labeled_weight")
        kept = weight if isinstance(weight, int) and not isinstance(weight, bool) else None
        return (found[0], found[1], found[2], kept if kept and kept >= 1 else None)


def previous_fit(session: Session, run: Run, *, with_labels: bool = True) -> Previous | None:
    """The dataset's most recently finished run of ``run``'s algorithm that fitted a model
    itself (not one applying another run's model), other than ``run``. Without
    ``with_labels`` its partition is not read (empty): a data-parallel fit continues from the
    mixture's parameters alone, and 20M labels would only weigh on the run's worker."""
    row = latest_fitted(session, run, RunResult.cluster_params, same_algorithm=True)
    if row is None:
        return None
    if not with_labels:
        return Previous(int(row[0]), dict(row[1] or {}), np.empty(0, dtype=np.int32))
    labels = read_labels(session=session, run_id=int(row[0]))
    if labels is None:
        return None
    return Previous(int(row[0]), dict(row[1] or {}), labels)


def warm_start_metrics(asked: bool, previous: Previous | None, estimator: Any) -> dict[str, Any]:
    """What a run that asked for a warm start continued: ``from_run`` (the run it could
    continue, or None) and ``continued`` (whether the kept fit started there: a fresh start
    that agrees with more of the annotations is kept instead)."""
    if not asked:
        return {}
    return {
        "warm_start": {
            "from_run": previous.run_id if previous is not None else None,
            "continued": bool(getattr(estimator, "warm_started_", False)),
        }
    }
