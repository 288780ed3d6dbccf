"""Each fit keeps its own warnings on the estimator (`fit_warnings_`), so fits that run at the
same time in different threads (the job runner's) never see each other's warnings."""

import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from app.engine import CEC, PPC


def _blobs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, 1.0, size=(60, 2)) for c in (0.0, 6.0, 12.0)])


def test_a_warning_is_raised_and_recorded() -> None:
    model = CEC(n_clusters=6, max_iter=1, n_init=1, random_state=0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model.fit(_blobs(0))
    assert len(model.fit_warnings_) == 1
    assert "did not converge within max_iter=1" in model.fit_warnings_[0]


def test_a_refit_reports_only_its_own_warnings() -> None:
    model = CEC(n_clusters=6, max_iter=1, n_init=1, random_state=0)
    with pytest.warns(ConvergenceWarning):
        model.fit(_blobs(0))
    model.set_params(max_iter=200, n_clusters=3)
    model.fit(_blobs(0))
    assert model.fit_warnings_ == []


def test_concurrent_fits_keep_their_own_warnings() -> None:
    quiet = [CEC(n_clusters=3, n_init=1, random_state=s) for s in range(4)]
    noisy = [PPC(n_components=3, max_iter=1, random_state=s) for s in range(4)]
    errors: list[BaseException] = []

    def fit(model: object, seed: int) -> None:
        try:
            model.fit(_blobs(seed))  # type: ignore[attr-defined]
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [
            threading.Thread(target=fit, args=(m, s))
            for s, pair in enumerate(zip(quiet, noisy, strict=True))
            for m in pair
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert all(m.fit_warnings_ == [] for m in quiet)
    assert all(
        len(m.fit_warnings_) == 1 and "PPC did not converge" in m.fit_warnings_[0] for m in noisy
    )
