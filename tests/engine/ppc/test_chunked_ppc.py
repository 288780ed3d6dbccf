"""``PPC.fit`` on a dask array (app/engine/ppc/chunked/chunked_ppc.py) against the in-memory EM.

From the same start and with exact E-steps, the data-parallel EM is the in-memory EM step for
step: relations that cross chunks are solved in their relation group, labeled rows are
conditioned in their chunk, and the moments reduced over chunks give the in-memory M-step. The
tests compare every fitted attribute at float tolerance, for every covariance model, with
labels in memory and as a dask array, on the threaded scheduler and on a real ``LocalCluster``;
then the start from a sample, bad input, cancel, and ``predict`` on a dask array.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import app.engine.core.chunked_input as chunked_input
import app.engine.ppc.chunked.relation_groups as relation_groups
from app.engine.ppc import PPC
from tests.engine._support.clusters import kill_one_worker, process_cluster, threads_unless_cluster

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
N_ROWS = 600 if NO_JIT else 6_000
CHUNK = N_ROWS // 6
K = 3


@pytest.fixture(autouse=True)
def _threaded_scheduler(request: pytest.FixtureRequest) -> Iterator[None]:
    with threads_unless_cluster(request):
        yield


class Data:
    """Three overlapping blobs with relations across chunks (soft, hard links, hard
    do-not-links; pairs, a triangle and a chain) and 5% of the rows labeled."""

    def __init__(self, seed: int = 0) -> None:
        X, truth = make_blobs(
            n_samples=N_ROWS, centers=K, n_features=3, cluster_std=2.5, random_state=seed
        )
        rng = np.random.default_rng(seed)
        self.X, self.truth = X, truth
        pairs = rng.choice(N_ROWS, size=(N_ROWS // 20, 2), replace=False)
        same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
        kind = rng.integers(0, 3, size=pairs.shape[0])
        weights = np.where(same, 0.8, -0.8)
        weights = np.where((kind == 1) & same, np.inf, weights)
        weights = np.where((kind == 2) & ~same, -np.inf, weights)
        # A loopy component (enumerated) and a chain: both cross chunk boundaries.
        a, b, c = (int(np.flatnonzero(truth == 0)[q]) for q in (0, -1, len(truth) // 6))
        loop = np.array([[a, b], [b, c], [c, a]])
        chain_rows = np.flatnonzero(truth == 1)[:: max(1, N_ROWS // 60)][:8]
        chain = np.stack([chain_rows[:-1], chain_rows[1:]], axis=1)
        used = set(loop.ravel()) | set(chain.ravel())
        keep = ~np.isin(pairs, list(used)).any(axis=1)
        self.pairs = np.concatenate([pairs[keep], loop, chain])
        self.weights = np.concatenate([weights[keep], [1.0, 1.0, 1.0], np.full(len(chain), 0.6)])
        labeled = rng.random(N_ROWS) < 0.05
        hard = np.isin(np.arange(N_ROWS), self.pairs[np.isinf(self.weights)].ravel())
        self.labels = np.where(labeled & ~hard, truth, -1).astype(np.int64)

    def dask(self, chunk: int = CHUNK) -> da.Array:
        return da.from_array(self.X, chunks=(chunk, -1))

    def start(self, covariance: str) -> dict[str, Any]:
        """A start of the given model: GaussianMixture-shaped parameters from the truth, moved."""
        rng = np.random.default_rng(1)
        means = np.stack([self.X[self.truth == k].mean(axis=0) for k in range(K)])
        means += rng.normal(scale=1.0, size=means.shape)
        cov = {
            "full": np.repeat(np.eye(3)[np.newaxis] * 4.0, K, axis=0),
            "tied": np.repeat(np.eye(3)[np.newaxis] * 4.0, K, axis=0),
            "diagonal": np.full((K, 3), 4.0),
            "spherical": np.full(K, 4.0),
        }[covariance]
        return {
            "weights_init": np.full(K, 1.0 / K),
            "means_init": means,
            "covariances_init": cov,
            "covariance": covariance,
        }


@pytest.fixture(scope="module")
def data() -> Data:
    return Data()


def _fit(data: Data, X: Any, labels: Any, **params: Any) -> PPC:
    return PPC(K, random_state=0, **params).fit(
        X, pairs=data.pairs, weights=data.weights, labels=labels
    )


def _same_fit(chunked: PPC, memory: PPC, rtol: float = 1e-7) -> None:
    # Rounding is relative to an array's scale, not to each entry: an off-diagonal covariance
    # 1,000 times smaller than the diagonal carries the diagonal's rounding, which differs with
    # the CPU's BLAS kernels (it failed at 2.6e-7 of such an entry on another machine).
    for name in ("weights_", "means_", "covariances_"):
        expected = getattr(memory, name)
        np.testing.assert_allclose(
            getattr(chunked, name), expected, rtol=rtol, atol=rtol * np.abs(expected).max()
        )
    assert chunked.n_iter_ == memory.n_iter_
    assert chunked.converged_ == memory.converged_
    assert chunked.lower_bound_ == pytest.approx(memory.lower_bound_, rel=1e-9)
    np.testing.assert_allclose(chunked.lower_bound_history_, memory.lower_bound_history_, rtol=1e-9)
    assert isinstance(chunked.labels_, da.Array)
    np.testing.assert_array_equal(chunked.labels_.compute(), memory.labels_)
    np.testing.assert_allclose(chunked.resp_.compute(), memory.resp_, rtol=1e-6, atol=1e-9)
    assert chunked.agreement_ == pytest.approx(memory.agreement_, rel=1e-12)
    assert chunked.covariance_ == memory.covariance_


@pytest.mark.parametrize("covariance", ["full", "tied", "diagonal", "spherical"])
@pytest.mark.parametrize("labels_kind", ["numpy", "dask"])
def test_same_start_is_the_in_memory_em_step_for_step(
    data: Data, covariance: str, labels_kind: str
) -> None:
    start = data.start(covariance)
    memory = _fit(data, data.X, data.labels, **start)
    labels = data.labels if labels_kind == "numpy" else da.from_array(data.labels, chunks=CHUNK)
    chunked = _fit(data, data.dask(), labels, **start)
    _same_fit(chunked, memory)
    assert chunked.execution_["execution"] == "data-parallel"
    assert chunked.execution_["chunks"] == 6
    assert chunked.execution_["relation_groups"] == 1
    assert chunked.execution_["related_rows"] == len(np.unique(data.pairs))
    assert chunked.execution_["start_sample_rows"] == 0  # the given start
    # EM with exact E-steps never lowers the penalised log-likelihood.
    assert np.all(np.diff(chunked.lower_bound_history_) >= -1e-9)


def test_relation_groups_split_by_component_give_the_same_fit(
    data: Data, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many small groups (whole components each) and another chunking: the same EM."""
    start = data.start("full")
    one = _fit(data, data.dask(), data.labels, **start)
    monkeypatch.setattr(relation_groups, "GROUP_ROWS", 16)
    many = _fit(data, data.dask(CHUNK // 2 + 7), data.labels, **start)
    groups = many.execution_["relation_groups"]
    assert groups > 1 and groups >= many.execution_["related_rows"] // 16
    _same_fit(many, one, rtol=1e-9)


def test_mean_field_component_follows_the_in_memory_em(data: Data) -> None:
    """A component too large to enumerate (max_exact_states small) is solved by mean field in
    its group, its marginals carried from pass to pass as in memory."""
    start = data.start("full")
    memory = _fit(data, data.X, data.labels, max_exact_states=8, **start)
    chunked = _fit(data, data.dask(), data.labels, max_exact_states=8, **start)
    _same_fit(chunked, memory, rtol=1e-6)


def test_start_from_a_sample_finds_the_blobs_and_keeps_every_hard_relation(
    data: Data, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunked_input, "SAMPLE_ROWS", N_ROWS // 10)
    monkeypatch.setattr(chunked_input, "SAMPLE_PER_CLUSTER", 10)
    chunked = _fit(data, data.dask(), data.labels)
    memory = _fit(data, data.X, data.labels)
    labels = chunked.labels_.compute()
    assert 0 < chunked.execution_["start_sample_rows"] < N_ROWS
    ari = adjusted_rand_score(data.truth, labels)
    assert ari >= adjusted_rand_score(data.truth, memory.labels_) - 0.02
    hard = np.isinf(data.weights)
    i, j = data.pairs[hard].T
    np.testing.assert_array_equal(labels[i] == labels[j], data.weights[hard] > 0)
    labeled = data.labels >= 0
    np.testing.assert_array_equal(labels[labeled], data.labels[labeled])
    assert chunked.covariance_ in ("full", "tied")  # 'auto' chose on the sample


def test_predict_on_a_dask_array_is_the_fitted_mixtures(data: Data) -> None:
    chunked = _fit(data, data.dask(), data.labels, **data.start("full"))
    proba = chunked.predict_proba(data.dask(CHUNK * 2))
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), chunked.predict_proba(data.X), rtol=1e-12)
    predicted = chunked.predict(data.dask())
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), chunked.predict(data.X))
    with pytest.raises(ValueError, match="expecting 3 features"):
        chunked.predict(da.zeros((10, 4), chunks=5))


def test_cancel_keeps_a_consistent_fit(data: Data) -> None:
    seen: list[int] = []

    def progress(iteration: int, cost: float) -> bool:
        seen.append(iteration)
        return iteration < 2

    chunked = _fit(data, data.dask(), data.labels, progress=progress, **data.start("full"))
    assert seen == [1, 2]
    assert chunked.n_iter_ == 2
    assert not chunked.converged_
    assert chunked.labels_.compute().shape == (N_ROWS,)


def test_non_finite_value_names_its_chunk_before_any_pass(data: Data) -> None:
    X = data.X.copy()
    X[CHUNK * 2 + 5, 1] = np.nan
    with pytest.raises(ValueError, match=f"chunk 2 .*first at row {CHUNK * 2 + 5}"):
        _fit(data, da.from_array(X, chunks=(CHUNK, -1)), data.labels)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("pair_out_of_range", "out of range"),
        ("label_too_large", "labels must be -1"),
        ("labels_clash", "hard do-not-link"),
    ],
)
def test_bad_side_information_is_refused_as_in_memory(
    data: Data, change: str, message: str
) -> None:
    pairs, weights, labels = data.pairs.copy(), data.weights.copy(), data.labels.copy()
    if change == "pair_out_of_range":
        pairs[0, 1] = N_ROWS + 3
    elif change == "label_too_large":
        labels[7] = K
    else:
        i, j = pairs[np.flatnonzero(weights == -np.inf)[0]]
        labels[i] = labels[j] = 0
    for X in (data.X, data.dask()):
        with pytest.raises(ValueError, match=message) as caught:
            PPC(K).fit(X, pairs=pairs, weights=weights, labels=labels)
        assert str(i if change == "labels_clash" else "") in str(caught.value)


def test_infeasible_hard_do_not_links_name_the_rows_of_the_data(data: Data) -> None:
    far = [N_ROWS - 1, 0, N_ROWS // 2]
    pairs = np.array([[far[0], far[1]], [far[1], far[2]], [far[2], far[0]]])
    with pytest.raises(ValueError, match=r"pair \(\d+, \d+\)") as caught:
        PPC(2).fit(data.dask(), pairs=pairs, weights=np.full(3, -np.inf))
    named = {int(v) for v in caught.value.args[0].split("(")[1].split(")")[0].split(", ")}
    assert named <= set(far)


# --- a real cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with process_cluster() as (_, client):
        yield client


@pytest.mark.skipif(NO_JIT, reason="worker processes compile the kernels: JIT only")
def test_local_cluster_gives_the_threaded_fit(data: Data, cluster: Any) -> None:
    start = data.start("full")
    with dask.config.set(scheduler="threads"):
        threaded = _fit(data, data.dask(), data.labels, **start)
    with cluster.as_current():
        distributed = _fit(data, data.dask(), data.labels, **start)
        labels = distributed.labels_.compute()
    np.testing.assert_allclose(distributed.means_, threaded.means_, rtol=1e-12)
    np.testing.assert_array_equal(labels, threaded.labels_.compute())
    assert distributed.n_iter_ == threaded.n_iter_


@pytest.mark.skipif(NO_JIT, reason="worker processes compile the kernels: JIT only")
def test_worker_killed_between_passes_gives_the_same_fit(data: Data, cluster: Any) -> None:
    """After pass 1 one worker process is SIGKILLed: the chunks, the labels and the relation
    groups it held are computed again on what is left (persisted, not scattered: they have a
    recipe), and the fit is the undisturbed one."""
    start = data.start("full")
    with dask.config.set(scheduler="threads"):
        reference = _fit(data, data.dask(), data.labels, **start)
    cluster.wait_for_workers(2, timeout=60)
    killed: list[str] = []

    def kill_one(iteration: int, cost: float) -> bool:
        if iteration == 1:
            killed.append(kill_one_worker(cluster))
        return True

    with cluster.as_current():
        chunked = _fit(data, data.dask(), data.labels, progress=kill_one, **start)
        labels = chunked.labels_.compute()
    assert killed
    assert chunked.n_iter_ == reference.n_iter_ > 1
    np.testing.assert_allclose(chunked.means_, reference.means_, rtol=1e-12)
    np.testing.assert_array_equal(labels, reference.labels_.compute())
