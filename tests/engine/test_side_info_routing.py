"""Side information is keyword-only and routed by scikit-learn's metadata routing.

Pipeline passes any of it; GridSearchCV splits per-row side information (PPC ``labels``, C3L
``side_scores``) with the rows, and refuses pairs, which name rows of the full X
(app/engine/side_info.py). ``y`` is never read as side information.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from app.engine import C3L, C4S, CEC, PPC, SMIC


@pytest.fixture(autouse=True)
def _routing() -> Iterator[None]:
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])
    truth = np.repeat(np.arange(3), 40)
    return centres[truth] * [1.0, 30.0] + rng.normal(size=(120, 2)) * [1.0, 30.0], truth


def _ari_search(estimator: BaseEstimator, grid: dict[str, list[object]]) -> GridSearchCV:
    """A grid search scored by ARI against y over 3 shuffled folds; a failing fit raises."""
    return GridSearchCV(
        estimator,
        grid,
        scoring="adjusted_rand_score",
        cv=KFold(3, shuffle=True, random_state=0),
        error_score="raise",
    )


def test_pipeline_routes_pairs_to_ppc() -> None:
    """The Pipeline fit equals PPC fitted on the scaled data with the same relations."""
    X, _ = _blobs()
    pairs = np.array([[0, 40], [1, 80], [41, 81]])
    weights = np.full(3, -np.inf)  # hard do-not-links between the three blobs
    ppc = PPC(3, random_state=0).set_fit_request(pairs=True, weights=True)
    pipe = make_pipeline(StandardScaler(), ppc).fit(X, pairs=pairs, weights=weights)
    direct = PPC(3, random_state=0).fit(
        StandardScaler().fit_transform(X), pairs=pairs, weights=weights
    )
    np.testing.assert_array_equal(pipe[-1].labels_, direct.labels_)
    labels = pipe[-1].labels_
    assert len({labels[0], labels[40], labels[80]}) == 3
    np.testing.assert_array_equal(
        pipe.predict(X), direct.predict(StandardScaler().fit(X).transform(X))
    )


@pytest.mark.parametrize(
    ("estimator", "request_"),
    [
        (C4S(6, n_init=2, random_state=0), {"must_link": True, "cannot_link": True}),
        (SMIC(3, max_neighbors=5, random_state=0), {"must_link": True, "cannot_link": True}),
        (C3L(4, n_init=2, random_state=0), {"side_scores": True}),
    ],
)
def test_pipeline_routes_every_kind(estimator: BaseEstimator, request_: dict[str, bool]) -> None:
    X, truth = _blobs(1)
    side = {
        "must_link": np.array([[0, 1], [40, 41]]),
        "cannot_link": np.array([[0, 40], [40, 80]]),
        "side_scores": np.where(truth == 0, 1.0, -1.0),
    }
    kwargs = {name: side[name] for name in request_}
    pipe = make_pipeline(StandardScaler(), estimator.set_fit_request(**request_)).fit(X, **kwargs)
    direct = type(estimator)(**estimator.get_params()).fit(
        StandardScaler().fit_transform(X), **kwargs
    )
    np.testing.assert_array_equal(pipe[-1].labels_, direct.labels_)


def test_pipeline_without_a_request_refuses_side_information() -> None:
    """Routing is explicit: unrequested side information is an error, not silently dropped."""
    X, _ = _blobs()
    with pytest.raises(ValueError, match="pairs"):
        make_pipeline(StandardScaler(), PPC(3)).fit(X, pairs=[[0, 1]], weights=[1.0])


def test_grid_search_splits_per_row_labels() -> None:
    """labels are split with the rows (a fold given all 120 labels would refuse them), and the
    labelled points keep their component."""
    X, truth = _blobs(2)
    labels = np.where(np.arange(120) % 10 == 0, truth, -1)
    ppc = PPC(random_state=0).set_fit_request(labels=True)
    search = _ari_search(ppc, {"n_components": [3, 4]}).fit(X, truth, labels=labels)
    # held-out rows are predicted by the plain mixture (labels do not apply to new rows)
    assert search.best_score_ > 0.7
    best = search.best_estimator_
    np.testing.assert_array_equal(best.labels_[labels >= 0], labels[labels >= 0])


def test_grid_search_splits_per_row_side_scores() -> None:
    X, truth = _blobs(3)
    scores = np.where(truth == 0, 1.0, -1.0)
    c3l = C3L(3, n_init=2, random_state=0).set_fit_request(side_scores=True)
    search = _ari_search(c3l, {"leakage": [0.01, 0.05]}).fit(X, truth, side_scores=scores)
    assert search.best_score_ > 0.7


@pytest.mark.parametrize(
    ("estimator", "request_", "kwargs"),
    [
        (PPC(3), {"pairs": True, "weights": True}, {"pairs": [[0, 119]], "weights": [1.0]}),
        (C4S(6), {"must_link": True}, {"must_link": [[0, 119]]}),
        (SMIC(3), {"cannot_link": True}, {"cannot_link": [[0, 119]]}),
    ],
)
def test_grid_search_cannot_split_pairs(
    estimator: BaseEstimator, request_: dict[str, bool], kwargs: dict[str, object]
) -> None:
    """Pairs index the full X; a fold has fewer rows, so the fit names the limitation."""
    X, truth = _blobs(4)
    search = GridSearchCV(
        estimator.set_fit_request(**request_), {"random_state": [0]}, scoring="adjusted_rand_score",
        cv=3, error_score="raise",
    )  # fmt: skip
    with pytest.raises(ValueError, match="cannot be routed through a cross-validation splitter"):
        search.fit(X, truth, **kwargs)


@pytest.mark.parametrize(
    "estimator",
    [PPC(3, random_state=0), C4S(6, n_init=2, random_state=0), SMIC(3, random_state=0)],
)
def test_y_is_never_side_information(estimator: BaseEstimator) -> None:
    X, truth = _blobs(5)
    with_y = type(estimator)(**estimator.get_params()).fit(X, truth).labels_
    np.testing.assert_array_equal(with_y, estimator.fit(X).labels_)


def test_c3l_without_side_scores_is_cec() -> None:
    """No boundary, no side factor: C3L's fit and predict are CEC's (true labels in y are
    ignored, where they used to be read as side scores)."""
    X, truth = _blobs(6)
    c3l = C3L(5, random_state=3).fit(X, truth)
    cec = CEC(5, random_state=3).fit(X)
    np.testing.assert_array_equal(c3l.labels_, cec.labels_)
    assert c3l.energy_ == pytest.approx(cec.energy_)
    np.testing.assert_array_equal(c3l.predict(X[::7]), cec.predict(X[::7]))
    assert c3l.side_means_ is None
    with pytest.raises(ValueError, match="fitted without side_scores"):
        c3l.predict(X, side_scores=np.ones(120))
