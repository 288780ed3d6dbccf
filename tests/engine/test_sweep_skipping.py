"""The sweep clock in C3L and C4S only skips evaluations whose answer cannot have changed.

Each fit is repeated with a sweep that forgets every earlier check (every point evaluated against
every cluster, as before the clock existed); the fitted partitions and energies must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from app.engine import C3L, C4S
from app.engine.c3l import fit as _c3l_fit
from app.engine.c4s import global_search as _c4s_global


def _forgetful(sweep: Callable[..., int], clock_arg: int) -> Callable[..., int]:
    def full_sweep(*args: Any) -> int:
        args[clock_arg].checked_at[:] = -1  # nothing was checked: evaluate everything
        return sweep(*args)

    return full_sweep


def _mixture(seed: int, n: int = 1500, d: int = 3, k: int = 6) -> np.ndarray:
    rng = np.random.RandomState(seed)
    centres = rng.normal(scale=4.0, size=(k, d))
    return centres[rng.randint(0, k, n)] + rng.normal(size=(n, d))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_c3l_skipping_gives_the_full_evaluation_result(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    X = _mixture(seed)
    scores = X @ np.random.RandomState(seed + 10).normal(size=X.shape[1])

    def fit() -> C3L:
        return C3L(8, n_init=1, max_iter=200, random_state=seed).fit(X, side_scores=scores)

    fast = fit()
    monkeypatch.setattr(_c3l_fit, "c3l_sweep", _forgetful(_c3l_fit.c3l_sweep, 11))
    full = fit()
    assert fast.n_iter_ == full.n_iter_ and fast.n_iter_ > 2
    np.testing.assert_array_equal(fast.labels_, full.labels_)
    assert fast.energy_ == pytest.approx(full.energy_, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_c4s_skipping_gives_the_full_evaluation_result(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    X = _mixture(seed)
    rng = np.random.RandomState(seed + 20)
    must = rng.randint(0, X.shape[0], size=(30, 2))
    cannot = rng.randint(0, X.shape[0], size=(15, 2))
    cannot = cannot[cannot[:, 0] != cannot[:, 1]]

    def fit() -> C4S:
        return C4S(8, n_init=1, max_iter=200, random_state=seed).fit(
            X, must_link=must, cannot_link=cannot
        )

    try:
        fast = fit()
    except ValueError:
        pytest.skip("random constraints happened to contradict each other")
    monkeypatch.setattr(_c4s_global, "global_sweep", _forgetful(_c4s_global.global_sweep, 10))
    full = fit()
    assert fast.n_iter_ == full.n_iter_ and fast.n_iter_ > 2
    np.testing.assert_array_equal(fast.labels_, full.labels_)
    assert fast.energy_ == pytest.approx(full.energy_, rel=1e-12)
