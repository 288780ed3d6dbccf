"""The engine never depends on, or changes, the caller's global NumPy error state (issue 18).

Another library may call ``np.seterr(all="raise")`` (active-semi-supervised-clustering does when
MPCKMeans is imported). With that state set, every estimator fits and predicts demo-like data
(three blobs with side information drawn from the truth) as it does under NumPy's defaults, and
the caller's state is exactly what it was afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.datasets import make_blobs

from app.engine import C3L, C4S, CEC, CECIB, PPC, SMIC
from app.engine.core.errstate import engine_errstate

IntArray = NDArray[np.int64]
NUMPY_DEFAULTS: Any = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


@pytest.fixture
def raising() -> Iterator[dict[str, str]]:
    """np.seterr(all="raise") for the test, the previous state restored afterwards."""
    saved = np.geterr()
    np.seterr(all="raise")
    try:
        yield np.geterr()
    finally:
        np.seterr(**saved)


def _data() -> tuple[NDArray[np.float64], IntArray]:
    X, y = make_blobs(240, centers=[[0, 0], [6, 0], [0, 6]], cluster_std=1.0, random_state=3)
    return np.asarray(X), np.asarray(y, dtype=np.int64)


def _pairs(y: IntArray) -> tuple[IntArray, IntArray]:
    rng = np.random.default_rng(0)
    pairs = rng.choice(y.shape[0], (40, 2), replace=False)
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    return pairs[same], pairs[~same]


def _labels(y: IntArray) -> IntArray:
    labels = np.full(y.shape[0], -1, dtype=np.int64)
    labels[::10] = y[::10]
    return labels


def _fit(model: Any, X: NDArray[np.float64], **side: Any) -> Any:
    # CEC-IB's labels move from ``y`` to ``labels=`` with issue 20; accept either signature
    if "labels" in side and "labels" not in inspect.signature(model.fit).parameters:
        return model.fit(X, side["labels"])
    return model.fit(X, **side)


def _estimators(y: IntArray) -> dict[str, Callable[[NDArray[np.float64]], Any]]:
    must, cannot = _pairs(y)
    pairs = np.concatenate([must, cannot])
    weights = np.r_[np.full(len(must), np.inf), np.full(len(cannot), -np.inf)]
    scores = np.where(y == 0, -1.0, 1.0)
    return {
        "CEC": lambda X: CEC(3, random_state=0).fit(X),
        "CECIB": lambda X: _fit(CECIB(3, random_state=0), X, labels=_labels(y)),
        "PPC": lambda X: PPC(3, random_state=0).fit(X, pairs=pairs, weights=weights),
        "C4S": lambda X: C4S(3, random_state=0).fit(X, must_link=must, cannot_link=cannot),
        "C3L": lambda X: C3L(3, random_state=0).fit(X, side_scores=scores),
        "SMIC": lambda X: SMIC(3, random_state=0).fit(X, must_link=must, cannot_link=cannot),
    }


@pytest.mark.parametrize("name", ["CEC", "CECIB", "PPC", "C4S", "C3L", "SMIC"])
def test_fits_and_predicts_under_a_raising_global_state(name: str, raising: dict[str, str]) -> None:
    X, y = _data()
    fit = _estimators(y)[name]
    with np.errstate(**NUMPY_DEFAULTS):
        reference = fit(X)  # what the result is under NumPy's defaults
    model = fit(X)
    assert np.geterr() == raising
    np.testing.assert_array_equal(model.labels_, reference.labels_)
    if name != "C3L":  # C3L's predict needs side scores of the new points
        np.testing.assert_array_equal(model.predict(X[:20]), reference.predict(X[:20]))
    else:
        model.predict(X[:20], side_scores=np.ones(20))
    assert np.geterr() == raising


def test_the_wrapper_restores_the_callers_state_even_on_error(raising: dict[str, str]) -> None:
    @engine_errstate
    def underflow_then_fail() -> None:
        assert np.geterr()["under"] == "ignore"
        np.exp(np.array([-1000.0]))  # would raise FloatingPointError under the caller's state
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        underflow_then_fail()
    assert np.geterr() == raising
    with pytest.raises(FloatingPointError):
        np.exp(np.array([-1000.0]))


def test_the_wrapper_keeps_the_signature_for_metadata_routing() -> None:
    params = inspect.signature(PPC.fit).parameters
    assert params["pairs"].kind is inspect.Parameter.KEYWORD_ONLY
