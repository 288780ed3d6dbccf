"""scikit-learn's estimator checks for CEC and CECIB.

No check is skipped by us. scikit-learn itself skips ``check_array_api_input`` unless the
environment sets SCIPY_ARRAY_API=1; the estimators work on numpy arrays only (numba kernels) and
do not claim array-API support.
"""

from __future__ import annotations

from collections.abc import Callable

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

from app.engine import CEC, CECIB


# A small n_init keeps the NUMBA_DISABLE_JIT run quick; no check depends on it.
@parametrize_with_checks([CEC(n_init=2), CECIB(n_init=2)])
def test_sklearn_compatible_estimator(
    estimator: BaseEstimator, check: Callable[[BaseEstimator], None]
) -> None:
    check(estimator)
