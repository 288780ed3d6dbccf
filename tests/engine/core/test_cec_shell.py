"""The CEC-family shells (CEC, CEC-IB, C4S, C3L) validate and report alike (``_cec_family``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from app.engine import C3L, C4S, CEC, CECIB

X = np.random.RandomState(0).normal(size=(120, 2)) + np.repeat([[0.0, 0.0], [6.0, 0.0]], 60, 0)

FITS: dict[str, Callable[..., Any]] = {
    "CEC": lambda data, **kw: CEC(**kw).fit(data),
    "CECIB": lambda data, **kw: CECIB(**kw).fit(data, np.full(data.shape[0], -1)),
    "C4S": lambda data, **kw: C4S(**kw).fit(data, must_link=[[0, 1]], cannot_link=[[0, 60]]),
    "C3L": lambda data, **kw: C3L(**kw).fit(data, side_scores=data[:, 0] - 3.0),
}


@pytest.mark.parametrize("name", FITS)
def test_convergence_warning_points_at_the_callers_line(name: str) -> None:
    with pytest.warns(ConvergenceWarning, match=f"{name} did not converge") as record:
        FITS[name](X, n_clusters=6, max_iter=1, n_init=1, random_state=0)
    assert [w.filename for w in record if w.category is ConvergenceWarning] == [__file__]


@pytest.mark.parametrize("name", FITS)
@pytest.mark.parametrize(
    ("data", "params", "message"),
    [
        (X, {"n_clusters": 500}, "n_clusters must be between 1 and 120"),
        (X, {"covariance": "banana"}, "covariance must be one of"),
        (X, {"min_cluster_fraction": 1.5}, "min_cluster_fraction"),
        (X, {"n_init": 0}, "n_init must be >= 1"),
        (X, {"max_iter": 0}, "max_iter must be >= 1"),
        (X, {"progress": "yes"}, "progress must be a callable"),
        (np.eye(3), {"n_clusters": 1}, "covariance='full' needs more samples than features"),
        (np.array([[0.0, np.nan], [1.0, 1.0], [2.0, 0.0]]), {"n_clusters": 1}, "NaN"),
    ],
)
def test_shared_parameters_are_checked_alike(
    name: str, data: np.ndarray, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FITS[name](data, **params)
