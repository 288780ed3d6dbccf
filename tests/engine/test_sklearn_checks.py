"""scikit-learn's estimator checks for all six estimators (CEC, CECIB, PPC, C4S, C3L, SMIC).

No check is skipped by us. scikit-learn itself skips ``check_array_api_input`` unless the
environment sets SCIPY_ARRAY_API=1; the estimators work on numpy arrays only (numba kernels) and
do not claim array-API support. Side information is keyword-only, so every check's ``fit(X, y)``
is the unsupervised fit (CECIB reads ``y`` as partial labels, the semi-supervised convention).
"""

from __future__ import annotations

from collections.abc import Callable

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

from app.engine import C3L, C4S, CEC, CECIB, PPC, SMIC

# Small n_init / grids keep the NUMBA_DISABLE_JIT run quick; no check depends on them.
ESTIMATORS = [
    CEC(n_init=2),
    CECIB(n_init=2),
    PPC(),
    C4S(n_init=2),
    C3L(n_init=2),
    SMIC(max_neighbors=5, n_basis=50),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(
    estimator: BaseEstimator, check: Callable[[BaseEstimator], None]
) -> None:
    check(estimator)
