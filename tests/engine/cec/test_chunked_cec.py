"""``CEC.fit`` / ``CECIB.fit`` on a dask array (app/engine/cec/chunked) against the in-memory fit
and the from-scratch cost ``cec_ib_energy``; bad input, cancel, and a real ``LocalCluster``
(one that loses a worker mid-fit).

The start of a data-parallel fit is the estimator fitted on a sample of ``SAMPLE_ROWS`` rows;
these data sets are smaller than that, so a fixture shrinks the sample (to a tenth of the rows,
or 300): the start is then imprecise and the passes over the chunks have work to do. With
NUMBA_DISABLE_JIT=1 the kernels (and the in-memory fits compared against) run as Python, so the
data shrink further.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import adjusted_rand_score

import app.engine.cec.chunked.chunked_cec as chunked_cec
import app.engine.cec.chunked.passes as passes
import app.engine.core.chunked_input as chunked_input
from app.engine.cec.cec_ib import CECIB
from app.engine.cec.estimator import CEC
from app.engine.core.cost import cec_ib_energy
from tests.engine._support.clusters import (
    kill_one_worker,
    process_cluster,
    scheduler_workers,
    threads_unless_cluster,
)

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
N_ROWS = 900 if NO_JIT else 30_000
N_CHUNKS = 6
CHUNK = N_ROWS // N_CHUNKS
K = 4
START_SAMPLE = max(N_ROWS // 10, 300)
COVARIANCES = ["full", "diagonal", "spherical"]
N_INIT = 2


@pytest.fixture(autouse=True)
def _small_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start fitted on a sample (not on all the rows, as SAMPLE_ROWS would)."""
    monkeypatch.setattr(chunked_input, "SAMPLE_ROWS", START_SAMPLE)
    monkeypatch.setattr(chunked_input, "SAMPLE_PER_CLUSTER", 10)
    monkeypatch.setattr(chunked_input, "SAMPLE_LABELED", N_ROWS // 20)


@pytest.fixture(autouse=True)
def _threaded_scheduler(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test but the cluster ones runs on the threaded scheduler, even while the module's
    ``Client`` is the default one."""
    with threads_unless_cluster(request):
        yield


class Blobs:
    """Four Gaussian blobs, 10% of the rows labeled, as NumPy and dask arrays."""

    def __init__(self, seed: int = 1, std: float = 3.0) -> None:
        X, truth = make_blobs(
            n_samples=N_ROWS,
            centers=K,
            n_features=3,
            cluster_std=std,
            center_box=(-20.0, 20.0),
            random_state=seed,
        )
        self.X = X
        self.truth = truth
        labeled = np.random.default_rng(seed).random(N_ROWS) < 0.1
        self.y = np.where(labeled, truth, -1).astype(np.int64)
        self._memory: dict[tuple[type, str], Any] = {}

    def memory_fit(self, estimator: type, covariance: str) -> Any:
        """The in-memory fit compared against (CECIB with the labels), fitted once."""
        key = (estimator, covariance)
        if key not in self._memory:
            est = estimator(K, n_init=N_INIT, random_state=0, covariance=covariance)
            self._memory[key] = est.fit(self.X, None if estimator is CEC else self.y)
        return self._memory[key]

    def dask(self, chunk: int = CHUNK) -> da.Array:
        return da.from_array(self.X, chunks=(chunk, -1))

    def dask_y(self, chunk: int = CHUNK) -> da.Array:
        return da.from_array(self.y, chunks=(chunk,))


@pytest.fixture(scope="module")
def blobs() -> Blobs:
    return Blobs()


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def _from_scratch(est: Any, X: np.ndarray, y: np.ndarray | None, labels: np.ndarray) -> float:
    beta = float(getattr(est, "beta", 0.0))
    return cec_ib_energy(X, labels, y if beta else None, beta, est.covariance)


def _check_fitted(
    est: Any, X: np.ndarray, y: np.ndarray | None, *, monotone: bool = True
) -> np.ndarray:
    """The attributes every data-parallel fit must have, consistent with each other and with
    the from-scratch cost of ``labels_``; returns the computed labels. ``monotone``: the energy
    history never rises (no cluster was removed on the way)."""
    assert isinstance(est.labels_, da.Array)
    labels = est.labels_.compute()
    assert labels.shape == (X.shape[0],)
    assert set(np.unique(labels)) == set(range(est.n_clusters_))
    assert est.energy_ == pytest.approx(_from_scratch(est, X, y, labels), rel=1e-9)
    history = np.asarray(est.energy_history_)
    assert history[-1] == est.energy_
    if monotone:
        assert np.all(np.diff(history) <= 1e-12 * abs(est.energy_))
    assert est.n_iter_ >= len(history) >= 1
    assert est.execution_["execution"] == "data-parallel"
    assert est.execution_["passes"] == est.n_iter_
    assert est.execution_["start_sample_rows"] < X.shape[0]
    # The parameters are the ML estimates of the partition labels_ describes.
    counts = np.bincount(labels, minlength=est.n_clusters_)
    np.testing.assert_allclose(est.weights_, counts / X.shape[0], rtol=1e-12)
    for c in range(est.n_clusters_):
        members = X[labels == c]
        np.testing.assert_allclose(est.means_[c], members.mean(axis=0), rtol=1e-9, atol=1e-9)
        cov = np.cov(members.T, bias=True)
        expected = {
            "full": cov,
            "diagonal": np.diag(cov),
            "spherical": np.trace(cov) / cov.shape[0],
        }[est.covariance]
        np.testing.assert_allclose(est.covariances_[c], expected, rtol=1e-8, atol=1e-10)
    return labels


def _agreement(labels: np.ndarray, y: np.ndarray) -> float:
    """Share of labeled rows whose cluster's majority label is their own."""
    labeled = y >= 0
    agree = 0
    for c in np.unique(labels[labeled]):
        agree += np.bincount(y[labeled & (labels == c)]).max()
    return agree / labeled.sum()


CASES = [
    pytest.param(CEC, None, id="CEC"),
    pytest.param(CECIB, "dask", id="CECIB-y-dask"),
    pytest.param(CECIB, "numpy", id="CECIB-y-numpy"),
]


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize(("estimator", "y_kind"), CASES)
def test_matches_in_memory_fit(
    blobs: Blobs, estimator: type, y_kind: str | None, covariance: str
) -> None:
    params = {"n_init": N_INIT, "random_state": 0, "covariance": covariance}
    y = None if y_kind is None else blobs.y
    memory = blobs.memory_fit(estimator, covariance)
    y_arg = {None: None, "dask": blobs.dask_y(), "numpy": blobs.y}[y_kind]
    Xd = blobs.dask()
    chunked = estimator(K, **params).fit(Xd, y_arg)

    labels = _check_fitted(chunked, blobs.X, y)
    assert chunked.n_clusters_ == K
    assert chunked.execution_["chunks"] == N_CHUNKS
    assert len(chunked.energy_history_) >= 2  # the passes improved on the start
    assert _rel(chunked.energy_, memory.energy_) <= 1e-6
    truth_ari = adjusted_rand_score(blobs.truth, memory.labels_)
    assert truth_ari > 0.95
    assert adjusted_rand_score(blobs.truth, labels) >= 0.98 * truth_ari

    predicted = chunked.predict(Xd)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), chunked.predict(blobs.X))
    if estimator is CECIB:
        assert chunked.labeled_weight_ == 1
        assert chunked.agreement_ == pytest.approx(_agreement(labels, blobs.y), rel=1e-12)


def test_labeled_weight_counts_labeled_rows_repeatedly(blobs: Blobs) -> None:
    """labeled_weight=3: the energy is that of the data with every labeled row three times,
    and the in-memory fit (which repeats them) reaches the same one."""
    w = 3
    params = {"n_init": N_INIT, "random_state": 0, "labeled_weight": w}
    chunked = CECIB(K, **params).fit(blobs.dask(), blobs.dask_y())
    memory = CECIB(K, **params).fit(blobs.X, blobs.y)
    labels = chunked.labels_.compute()
    labeled = np.flatnonzero(blobs.y >= 0)
    rows = np.concatenate([np.arange(N_ROWS), np.repeat(labeled, w - 1)])
    repeated = cec_ib_energy(blobs.X[rows], labels[rows], blobs.y[rows], 1.0)
    assert chunked.energy_ == pytest.approx(repeated, rel=1e-9)
    assert _rel(chunked.energy_, memory.energy_) <= 1e-6
    assert chunked.labeled_weight_ == w
    counts = np.bincount(labels[rows], minlength=chunked.n_clusters_)
    np.testing.assert_allclose(chunked.weights_, counts / rows.shape[0], rtol=1e-12)
    assert chunked.agreement_ == pytest.approx(_agreement(labels, blobs.y), rel=1e-12)
    assert np.all(np.diff(chunked.energy_history_) <= 1e-12 * chunked.energy_)


@pytest.mark.parametrize(
    ("estimator", "extra"),
    [
        pytest.param(CEC, {}, id="CEC"),
        pytest.param(CECIB, {}, id="CECIB"),
        pytest.param(CECIB, {"labeled_weight": 3}, id="CECIB-weight-3"),
    ],
)
def test_polishing_after_an_unfinished_pass_is_kept(
    blobs: Blobs, estimator: type, extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """max_iter=1 from a start fitted on 50 rows: one classification pass, then chunk
    polishing, which lowers the energy of a partition the passes have not settled (the fit
    still did not converge); labels_ replays the polished pass."""
    monkeypatch.setattr(chunked_input, "SAMPLE_ROWS", 50)
    monkeypatch.setattr(chunked_input, "SAMPLE_LABELED", 25)
    est = estimator(K, n_init=N_INIT, random_state=0, max_iter=1, **extra)
    y = None if estimator is CEC else blobs.dask_y()
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        est.fit(blobs.dask(), y)
    assert est.execution_["polished"] is True
    assert est.converged_ is False
    history = est.energy_history_
    assert len(history) >= 2 and history[-1] < history[0]
    labels = est.labels_.compute()
    if extra:  # labeled rows count three times
        labeled = np.flatnonzero(blobs.y >= 0)
        rows = np.concatenate([np.arange(N_ROWS), np.repeat(labeled, 2)])
        expected = cec_ib_energy(blobs.X[rows], labels[rows], blobs.y[rows], 1.0)
        assert est.energy_ == pytest.approx(expected, rel=1e-9)
    else:
        _check_fitted(est, blobs.X, None if estimator is CEC else blobs.y)


def test_clusters_removed_by_the_passes(blobs: Blobs, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight clusters on four blobs, from a start fitted on 120 rows that keeps all eight: the
    passes drop the ones under the minimum, and the fit describes what is left."""
    monkeypatch.setattr(chunked_input, "SAMPLE_ROWS", 120)
    starts: list[int] = []
    original = chunked_cec._fit_sample

    def spy(*args: Any) -> Any:
        start = original(*args)
        starts.append(start.n_clusters_)
        return start

    monkeypatch.setattr(chunked_cec, "_fit_sample", spy)
    est = CEC(8, n_init=N_INIT, random_state=0, min_cluster_fraction=0.05).fit(blobs.dask())
    assert starts == [8]
    assert est.n_clusters_ == K
    assert est.converged_ is True
    labels = _check_fitted(est, blobs.X, None, monotone=False)
    assert est.weights_.min() >= 0.05
    assert adjusted_rand_score(blobs.truth, labels) > 0.95


def test_result_does_not_depend_on_the_chunking(blobs: Blobs) -> None:
    fits = [
        CEC(K, n_init=N_INIT, random_state=0).fit(blobs.dask(chunk))
        for chunk in (CHUNK, CHUNK * 7 // 5)
    ]
    assert [f.execution_["chunks"] for f in fits] == [N_CHUNKS, 5]
    assert _rel(fits[0].energy_, fits[1].energy_) <= 1e-6
    labels = [f.labels_.compute() for f in fits]
    assert adjusted_rand_score(labels[0], labels[1]) == 1.0


def test_column_chunks_and_unknown_row_chunks(blobs: Blobs) -> None:
    """X chunked along its columns too, or with unknown row-chunk sizes (a boolean mask that
    empties one chunk): the same answer as the plain chunking of the same rows."""
    params = {"n_init": N_INIT, "random_state": 0}
    plain = CEC(K, **params).fit(blobs.dask())
    by_column = CEC(K, **params).fit(da.from_array(blobs.X, chunks=(CHUNK, 1)))
    assert by_column.energy_ == plain.energy_
    np.testing.assert_array_equal(by_column.labels_.compute(), plain.labels_.compute())

    keep = np.ones(N_ROWS, dtype=bool)
    keep[2 * CHUNK : 3 * CHUNK] = False  # chunk 2 becomes empty
    keep[4 * CHUNK : 4 * CHUNK + CHUNK // 2] = False
    masked = blobs.dask()[da.from_array(keep, chunks=CHUNK)]
    assert np.isnan(masked.shape[0])
    est = CEC(K, **params).fit(masked)
    assert est.execution_["chunks"] == N_CHUNKS
    labels = _check_fitted(est, blobs.X[keep], None)
    assert est.n_clusters_ == K
    assert adjusted_rand_score(blobs.truth[keep], labels) > 0.95


def test_labels_with_unknown_chunk_sizes(blobs: Blobs) -> None:
    keep = np.ones(N_ROWS, dtype=bool)
    keep[4 * CHUNK : 4 * CHUNK + CHUNK // 2] = False
    mask = da.from_array(keep, chunks=CHUNK)
    est = CECIB(K, n_init=N_INIT, random_state=0).fit(blobs.dask()[mask], blobs.dask_y()[mask])
    _check_fitted(est, blobs.X[keep], blobs.y[keep])


def test_label_values_need_not_be_0_to_m(blobs: Blobs) -> None:
    """Labels 5, 17, 40, 41 (one of them only in the last chunks) fit as 0..3 do."""
    y = blobs.y.copy()
    y[(y == 3) & (np.arange(N_ROWS) < 4 * CHUNK)] = -1
    values = np.array([5, 17, 40, 41])
    renamed = np.where(y >= 0, values[np.maximum(y, 0)], -1)
    fits = [
        CECIB(K, n_init=N_INIT, random_state=0).fit(blobs.dask(), labels) for labels in (y, renamed)
    ]
    assert fits[1].energy_ == fits[0].energy_
    labels = fits[1].labels_.compute()
    np.testing.assert_array_equal(labels, fits[0].labels_.compute())
    assert fits[1].energy_ == pytest.approx(cec_ib_energy(blobs.X, labels, renamed, 1.0), rel=1e-9)
    assert fits[1].agreement_ == pytest.approx(_agreement(labels, renamed), rel=1e-12)


def _with_constant_column(X: np.ndarray) -> np.ndarray:
    return np.column_stack([X[:, :1], np.full(X.shape[0], 2.5), X[:, 1:]])


def test_degenerate_feature_runs_in_principal_components(blobs: Blobs) -> None:
    X = _with_constant_column(blobs.X)
    Xd = da.from_array(X, chunks=(CHUNK, -1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est = CEC(K, n_init=N_INIT, random_state=0).fit(Xd)
        memory = CEC(K, n_init=N_INIT, random_state=0).fit(X)
    assert est.projection_ is not None and est.means_.shape == (K, 3)
    labels = est.labels_.compute()
    projected = est.projection_.transform(X)
    assert est.energy_ == pytest.approx(cec_ib_energy(projected, labels), rel=1e-9)
    assert _rel(est.energy_, memory.energy_) <= 1e-6
    np.testing.assert_array_equal(est.predict(Xd).compute(), est.predict(X))


def test_degenerate_feature_warns_as_the_in_memory_fit(blobs: Blobs) -> None:
    Xd = da.from_array(_with_constant_column(blobs.X), chunks=(CHUNK, -1))
    est = CEC(K, n_init=N_INIT, random_state=0)
    with pytest.warns(UserWarning, match="principal components"):
        est.fit(Xd)
    assert any("principal components" in m for m in est.fit_warnings_)


@pytest.mark.parametrize("estimator", [CEC, CECIB])
def test_convergence_warning_points_at_the_caller_and_is_recorded(
    blobs: Blobs, estimator: type
) -> None:
    est = estimator(K, n_init=N_INIT, random_state=0, max_iter=1)
    y = None if estimator is CEC else blobs.dask_y()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        est.fit(blobs.dask(), y)
    assert [w.filename for w in record if w.category is ConvergenceWarning] == [__file__]
    assert len(est.fit_warnings_) == 1
    assert "did not converge within max_iter=1" in est.fit_warnings_[0]


def test_a_refit_reports_only_its_own_warnings(blobs: Blobs) -> None:
    est = CEC(K, n_init=N_INIT, random_state=0, max_iter=1)
    with pytest.warns(ConvergenceWarning):
        est.fit(blobs.dask())
    est.set_params(max_iter=100)
    est.fit(blobs.dask())
    assert est.converged_ is True
    assert est.fit_warnings_ == []


# --- bad input -------------------------------------------------------------------------------


class Recorder:
    """A progress callback that records its calls (and returns ``stop_at``'s verdict)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[tuple[int, float]] = []
        self.stop_at = stop_at

    def __call__(self, iteration: int, energy: float) -> bool:
        self.calls.append((iteration, energy))
        return self.stop_at is None or len(self.calls) < self.stop_at


@pytest.fixture
def pass_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the passes over the chunks (``passes.run_pass`` calls)."""
    calls: list[int] = []
    original = passes.run_pass

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(passes, "run_pass", spy)
    return calls


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_value_names_its_chunk_before_any_pass(
    blobs: Blobs, pass_spy: list[int], value: float
) -> None:
    X = blobs.X.copy()
    row = 2 * CHUNK + 7
    X[row, 1] = value
    X[4 * CHUNK + 1, 0] = value  # a later chunk too: the first is named
    progress = Recorder()
    with pytest.raises(ValueError, match=rf"chunk 2 \(rows {2 * CHUNK} to {3 * CHUNK - 1}\)") as e:
        CEC(K, n_init=N_INIT, random_state=0, progress=progress).fit(
            da.from_array(X, chunks=(CHUNK, -1))
        )
    assert f"first at row {row}" in str(e.value)
    assert progress.calls == []
    assert pass_spy == []


@pytest.mark.parametrize("as_dask", [True, False], ids=["y-dask", "y-numpy"])
@pytest.mark.parametrize(
    ("bad", "chunk", "message"),
    [
        (-2.0, 1, ">= -1"),
        (0.5, 4, "integers"),
        (np.nan, 3, "integers"),
    ],
)
def test_bad_labels_name_their_chunk(
    blobs: Blobs, pass_spy: list[int], bad: float, chunk: int, message: str, as_dask: bool
) -> None:
    y = blobs.y.astype(np.float64)
    y[chunk * CHUNK + 3] = bad
    progress = Recorder()
    y_arg = da.from_array(y, chunks=CHUNK) if as_dask else y
    with pytest.raises(ValueError, match=message) as e:
        CECIB(K, n_init=N_INIT, random_state=0, progress=progress).fit(blobs.dask(), y_arg)
    assert f"chunk {chunk} " in str(e.value)
    assert progress.calls == [] and pass_spy == []


def test_labels_of_the_wrong_length(blobs: Blobs) -> None:
    for y in (blobs.y[:-1], da.from_array(blobs.y[:-1], chunks=CHUNK)):
        with pytest.raises(ValueError, match="one label per row"):
            CECIB(K, n_init=N_INIT, random_state=0).fit(blobs.dask(), y)


def test_predict_checks_the_feature_count(blobs: Blobs) -> None:
    est = CEC(K, n_init=N_INIT, random_state=0).fit(blobs.dask())
    wrong = da.from_array(np.zeros((50, 2)), chunks=(25, -1))
    with pytest.raises(ValueError, match="features"):
        est.predict(wrong)
    with pytest.raises(ValueError, match="2D"):
        CEC(K, n_init=N_INIT, random_state=0).fit(blobs.dask()[:, 0])


def test_predict_before_fit_raises_not_fitted(blobs: Blobs) -> None:
    with pytest.raises(NotFittedError):
        CEC(K).predict(blobs.dask())


# --- progress and cancel ---------------------------------------------------------------------


def test_progress_reports_every_kept_pass(blobs: Blobs) -> None:
    progress = Recorder()
    est = CECIB(K, n_init=N_INIT, random_state=0, progress=progress).fit(
        blobs.dask(), blobs.dask_y()
    )
    assert [e for _, e in progress.calls] == est.energy_history_
    iterations = [i for i, _ in progress.calls]
    assert iterations[0] == 1 and iterations == sorted(set(iterations))
    assert iterations[-1] <= est.n_iter_
    assert est.converged_ is True


@pytest.mark.parametrize("stop_at", [1, 2])
@pytest.mark.parametrize("estimator", [CEC, CECIB])
def test_cancel_keeps_a_consistent_fit(blobs: Blobs, estimator: type, stop_at: int) -> None:
    progress = Recorder(stop_at=stop_at)
    y = None if estimator is CEC else blobs.dask_y()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # cancelled is not unconverged
        est = estimator(K, n_init=N_INIT, random_state=0, progress=progress).fit(blobs.dask(), y)
    assert [i for i, _ in progress.calls] == list(range(1, stop_at + 1))
    assert est.n_iter_ == stop_at
    assert len(est.energy_history_) == stop_at
    assert est.converged_ is False
    assert est.execution_["polished"] is False
    _check_fitted(est, blobs.X, None if estimator is CEC else blobs.y)
    assert est.n_clusters_ == K


# --- a real cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Any, Any]]:
    pytest.importorskip("distributed")
    with process_cluster() as (local, client):
        yield local, client


def _ready(client: Any) -> list[str]:
    """Wait for both workers (a killed one is restarted by its nanny); their addresses."""
    client.wait_for_workers(2, timeout=60)
    # Asked of the scheduler itself: the client's cached ``scheduler_info`` can still be empty
    # on a loaded machine (a CI run found no workers there while both ran the passes).
    return scheduler_workers(client)


@pytest.fixture
def threaded_reference(blobs: Blobs) -> tuple[CEC, np.ndarray]:
    with dask.config.set(scheduler="threads"):
        est = CEC(K, n_init=N_INIT, random_state=0).fit(blobs.dask())
        return est, est.labels_.compute()


def test_local_cluster_matches_threaded_scheduler(
    blobs: Blobs, cluster: tuple[Any, Any], threaded_reference: tuple[CEC, np.ndarray]
) -> None:
    from distributed import get_task_stream

    _, client = cluster
    workers = _ready(client)
    reference, reference_labels = threaded_reference
    with get_task_stream(client) as stream:
        est = CEC(K, n_init=N_INIT, random_state=0).fit(blobs.dask())
    ran = {t["worker"] for t in stream.data if "pass_chunk" in str(t["key"])}
    assert ran == set(workers)  # the passes ran on the cluster's two processes
    assert _rel(est.energy_, reference.energy_) <= 1e-9
    assert est.energy_history_ == pytest.approx(reference.energy_history_, rel=1e-9)
    np.testing.assert_array_equal(est.labels_.compute(), reference_labels)
    np.testing.assert_array_equal(est.predict(blobs.dask()).compute(), reference.predict(blobs.X))


def test_worker_killed_between_passes(
    blobs: Blobs, cluster: tuple[Any, Any], threaded_reference: tuple[CEC, np.ndarray]
) -> None:
    """After pass 1 one worker process is SIGKILLed (and the scheduler has noticed): the fit
    finishes on what is left, with the undisturbed fit's energy and labels."""
    _, client = cluster
    _ready(client)
    reference, reference_labels = threaded_reference
    killed: list[str] = []

    def kill_one(iteration: int, energy: float) -> bool:
        if iteration == 1:
            killed.append(kill_one_worker(client))
        return True

    est = CEC(K, n_init=N_INIT, random_state=0, progress=kill_one).fit(blobs.dask())
    assert len(killed) == 1
    assert killed[0] not in scheduler_workers(client)
    assert est.n_iter_ > 1
    assert _rel(est.energy_, reference.energy_) <= 1e-9
    np.testing.assert_array_equal(est.labels_.compute(), reference_labels)


def _tripwire(armed: Path) -> Callable[[np.ndarray], np.ndarray]:
    """A chunk function that, once ``armed`` exists, kills the worker process running the
    first chunk that claims it (an atomic rename: exactly one death)."""
    path = str(armed)

    def rows(block: np.ndarray) -> np.ndarray:
        try:
            os.rename(path, path + ".taken")
        except FileNotFoundError:
            return block
        os._exit(1)

    return rows


def test_worker_dies_in_the_middle_of_a_pass(
    blobs: Blobs,
    cluster: tuple[Any, Any],
    threaded_reference: tuple[CEC, np.ndarray],
    tmp_path: Path,
) -> None:
    """Pass 2's first chunk task kills its worker process: the scheduler runs the lost tasks
    again elsewhere, and the fit ends as the undisturbed one."""
    _, client = cluster
    workers = _ready(client)
    reference, reference_labels = threaded_reference
    armed = tmp_path / "armed"
    X = blobs.dask().map_blocks(_tripwire(armed), dtype=np.float64)

    def arm(iteration: int, energy: float) -> bool:
        if iteration == 1:
            armed.touch()
        return True

    est = CEC(K, n_init=N_INIT, random_state=0, progress=arm).fit(X)
    assert not armed.exists() and (tmp_path / "armed.taken").exists()  # a worker died
    assert scheduler_workers(client) != workers  # ... and the scheduler saw it go
    assert _rel(est.energy_, reference.energy_) <= 1e-9
    np.testing.assert_array_equal(est.labels_.compute(), reference_labels)


def test_a_continued_mixture_starts_where_it_ended(blobs: Blobs) -> None:
    """``start_from_mixture``: no sample fit, the passes start at the end, the same partition;
    the mixture is taken by that fit (the next starts afresh), and one that does not fit the
    data (another width) is not continued."""
    params = {"n_init": N_INIT, "random_state": 0}
    first = CECIB(K, **params).fit(blobs.dask(), blobs.dask_y())
    labels = first.labels_.compute()
    assert not first.warm_started_ and first.execution_["start"] == "sample fit"

    again = CECIB(K, **params).start_from_mixture(
        first.weights_, first.means_, first.covariances_, first.labeled_weight_
    )
    again.fit(blobs.dask(), blobs.dask_y())
    assert again.warm_started_ and again.execution_["start"] == "continued"
    # Its first pass is where the first fit ended (no sample fit, no pass to get there), one
    # more sees it settled; no polishing trial (the first fit made it).
    assert again.energy_history_[0] == pytest.approx(first.energy_, rel=1e-12)
    assert again.n_iter_ == 2 and not again.execution_["polished"]
    np.testing.assert_array_equal(again.labels_.compute(), labels)
    assert again.energy_ == pytest.approx(first.energy_, rel=1e-9)
    _check_fitted(again, blobs.X, blobs.y)

    again.fit(blobs.dask(), blobs.dask_y())  # taken: this one starts afresh
    assert not again.warm_started_ and again.execution_["start"] == "sample fit"

    narrow = CECIB(K, **params).start_from_mixture(
        first.weights_, first.means_[:, :2], first.covariances_[:, :2, :2]
    )
    narrow.fit(blobs.dask(), blobs.dask_y())
    assert not narrow.warm_started_
    assert adjusted_rand_score(blobs.truth, narrow.labels_.compute()) > 0.9
