"""The contract between an algorithm's plan and the runner: what a fitted estimator must have,
what it may have, and the one place the runner reads it.

Every plan (`algorithms/`) returns a `FitPlan` whose estimator is a `FittedEstimator`. After
`fit`, `labels_` holds one cluster per item (a lazy dask array after a data-parallel fit). The
rest is optional, by method, and read here only, under the names below:
- `best_estimator_`, `choice_`: a chooser among candidate fits (`MostCoherentFit`): its pick is
  the model, and how it chose goes to the run's metrics.
- `weights_`, `means_`, `covariances_`, `covariance_`: the clusters' parameters, shown with the
  result and continued by a later run's warm start (`continuation.py`).
- `energy_`, `n_iter_`, `n_neighbors_`, `smi_`, `converged_`, `agreement_`, `labeled_weight_`,
  `weight_searched_with_`: scalars shown with the result (the last three also continued).
- `fit_warnings_`: the fit's own warnings, read from the estimator rather than caught
  process-wide, so runs in other threads keep theirs.
- `execution_`: what ran where in a data-parallel fit (chunks, passes).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

MAX_PARAM_VALUES = 100_000  # per-cluster parameters larger than this are not kept
CLUSTER_ARRAYS = ("weights_", "means_", "covariances_")
SCALARS = (
    "energy_", "n_iter_", "n_neighbors_", "smi_", "converged_", "agreement_",
    "labeled_weight_", "weight_searched_with_",
)  # fmt: skip


class FittedEstimator(Protocol):
    """A scikit-learn estimator whose `fit` sets `labels_` (module docstring)."""

    @property
    def fit(self) -> Callable[..., Any]: ...  # fit(X, **side_information) -> self


@dataclass(frozen=True)
class Fitted:
    """What a run keeps of a fitted plan."""

    model: Any  # the fitted estimator (a chooser's pick)
    labels: NDArray[np.int32]  # (a lazy dask array when read `lazy`)
    choice: dict[str, Any] | None
    warnings: frozenset[str]
    execution: dict[str, Any]


def read_fitted(estimator: FittedEstimator, labels: Any = None, *, lazy: bool = False) -> Fitted:
    """The fit's result; `labels` when they came otherwise (a stored model applied to another
    image predicts them). With `lazy`, a data-parallel fit's labels stay a lazy dask array
    (`run/chunked_result.py` measures and writes them where they are)."""
    model: Any = getattr(estimator, "best_estimator_", estimator)
    found = model.labels_ if labels is None else labels
    return Fitted(
        model=model,
        labels=found if lazy else np.asarray(_computed(found), np.int32),
        choice=getattr(estimator, "choice_", None),
        warnings=frozenset(getattr(model, "fit_warnings_", [])),
        execution=getattr(model, "execution_", {}),
    )


def cluster_params(model: Any) -> dict[str, Any]:
    """What the result shows of each cluster; with the covariances and their model, a later
    run can also continue this mixture (``warm_start``, continuation.py)."""
    params: dict[str, Any] = {}
    for name in CLUSTER_ARRAYS:
        value = getattr(model, name, None)
        if value is not None and np.size(value) <= MAX_PARAM_VALUES:
            params[name.rstrip("_")] = np.asarray(value).tolist()
    if isinstance(getattr(model, "covariance_", None), str):
        params["covariance"] = model.covariance_
    for name in SCALARS:
        value = getattr(model, name, None)
        if isinstance(value, (int, float, bool, np.integer, np.floating, np.bool_)):
            params[name.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return params


def _computed(labels: Any) -> Any:
    """A data-parallel fit's labels are a lazy dask array: computed on the cluster."""
    return labels.compute() if hasattr(labels, "dask") else labels
