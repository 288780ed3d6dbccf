"""The ``C4S`` estimator: hard constraints always hold, special cases of spec c4s.md Sec. 4.3,
equivalence with CEC without constraints, validation, progress and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from app.engine import C4S, CEC, cec_ib_energy


def _blobs(seed: int, n_per: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0]])
    X = np.concatenate([rng.normal(size=(n_per, 2)) + c for c in centers])
    return X, np.repeat(np.arange(4), n_per)


def _constraints(
    truth: np.ndarray, rng: np.random.Generator, n_ml: int, n_cl: int
) -> tuple[np.ndarray, np.ndarray]:
    """Random consistent pairs from a ground truth (Sec. 4.3 property test)."""
    n = truth.shape[0]
    ml: list[tuple[int, int]] = []
    cl: list[tuple[int, int]] = []
    while len(ml) < n_ml or len(cl) < n_cl:
        a, b = (int(v) for v in rng.integers(0, n, size=2))
        if a == b:
            continue
        if truth[a] == truth[b] and len(ml) < n_ml:
            ml.append((a, b))
        elif truth[a] != truth[b] and len(cl) < n_cl:
            cl.append((a, b))
    return np.array(ml).reshape(-1, 2), np.array(cl).reshape(-1, 2)


def test_without_constraints_it_is_cec() -> None:
    """Every item is a point: same start, same sweeps, same partition as the core CEC."""
    X, _ = _blobs(0)
    for seed in range(3):
        a = C4S(6, min_cluster_fraction=0.05, n_init=2, max_iter=100, random_state=seed).fit(X)
        b = CEC(6, min_cluster_fraction=0.05, n_init=2, random_state=seed, polish=False).fit(X)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        assert a.energy_ == pytest.approx(b.energy_, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_hard_constraints_hold_on_random_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X, truth = _blobs(seed, 40)
    # a noisy truth, so the constraints fight the data
    noisy = np.where(rng.random(truth.shape[0]) < 0.2, rng.integers(0, 4, truth.shape[0]), truth)
    ml, cl = _constraints(noisy, rng, int(rng.integers(5, 40)), int(rng.integers(5, 40)))
    model = C4S(8, n_chunklet_clusters=3, n_init=2, random_state=seed).fit(
        X, must_link=ml, cannot_link=cl
    )
    labels = model.labels_
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
    assert np.all(labels[cl[:, 0]] != labels[cl[:, 1]])
    assert model.n_clusters_ == labels.max() + 1 <= model.cluster_labels_.max() + 1 <= 8
    # energy_ is the pre-merge CEC cost of cluster_labels_ (eq. 4)
    expected = cec_ib_energy(X, model.cluster_labels_, np.full(X.shape[0], -1), 0.0, "full")
    assert model.energy_ == pytest.approx(expected, rel=1e-9)


def test_must_link_only_instances_keep_chunklets_together() -> None:
    rng = np.random.default_rng(11)
    X, truth = _blobs(11, 40)
    ml, _ = _constraints(truth, rng, 60, 0)
    labels = C4S(8, n_init=2, random_state=0).fit(X, must_link=ml).labels_
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])


def test_two_chunklets_covering_everything_give_two_groups() -> None:
    X, truth = _blobs(1, 30)
    left = np.nonzero(truth < 2)[0]
    right = np.nonzero(truth >= 2)[0]
    ml = np.concatenate([np.stack([left[:-1], left[1:]], 1), np.stack([right[:-1], right[1:]], 1)])
    model = C4S(4, n_init=2, random_state=0).fit(X, must_link=ml, cannot_link=[[left[0], right[0]]])
    assert model.n_clusters_ == 2
    np.testing.assert_array_equal(model.labels_, (truth >= 2).astype(int))


def test_one_chunklet_covering_everything_gives_one_group() -> None:
    X, _ = _blobs(2, 30)
    n = X.shape[0]
    ml = np.stack([np.arange(n - 1), np.arange(1, n)], 1)
    model = C4S(5, n_init=1, random_state=0).fit(X, must_link=ml)
    assert model.n_clusters_ == 1
    assert model.cluster_labels_.max() >= 1  # the chunklet was split into several Gaussians


def test_progress_stop_leaves_a_valid_partition() -> None:
    X, truth = _blobs(3, 40)
    ml, cl = _constraints(truth, np.random.default_rng(3), 20, 20)
    calls: list[tuple[int, float]] = []

    def stop_at_once(iteration: int, cost: float) -> bool:
        calls.append((iteration, cost))
        return False

    model = C4S(8, n_init=5, random_state=0, progress=stop_at_once).fit(
        X, must_link=ml, cannot_link=cl
    )
    assert len(calls) == 1 and calls[0][0] == 1
    assert not model.converged_
    assert np.all(model.labels_[cl[:, 0]] != model.labels_[cl[:, 1]])
    assert np.all(model.labels_[ml[:, 0]] == model.labels_[ml[:, 1]])


def test_random_state_reproduces_and_clone_keeps_params() -> None:
    X, truth = _blobs(4, 30)
    ml, cl = _constraints(truth, np.random.default_rng(4), 10, 10)
    model = C4S(6, n_init=2, random_state=7)
    a = model.fit(X, must_link=ml, cannot_link=cl).labels_.copy()
    assert model.fit(X, must_link=ml, cannot_link=cl) is model
    np.testing.assert_array_equal(a, model.labels_)
    assert clone(model).get_params() == model.get_params()
    assert model.n_features_in_ == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"must_link": [[0, 500]]}, r"must_link row 0 is \(0, 500\)"),
        ({"cannot_link": [[-1, 2]]}, "cannot_link row 0"),
        ({"must_link": [[0, 1, 2]]}, r"must_link must be an \(m, 2\) array"),
        ({"must_link": [[0.5, 1]]}, "integer point indices"),
        ({"must_link": [[0, 1], [1, 2]], "cannot_link": [[2, 0]]}, "chain 2 - 1 - 0"),
        ({"cannot_link": [[3, 3]]}, "itself"),
    ],
)
def test_bad_constraints_are_value_errors(kwargs: dict[str, object], message: str) -> None:
    X, _ = _blobs(0, 20)
    with pytest.raises(ValueError, match=message):
        C4S(4, n_init=1).fit(X, **kwargs)  # type: ignore[arg-type]


def test_bad_data_and_parameters_are_value_errors() -> None:
    X, _ = _blobs(0, 20)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        C4S(4).fit(bad)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        C4S(4).fit(bad)
    with pytest.raises(ValueError, match="n_clusters"):
        C4S(0).fit(X)
    with pytest.raises(ValueError, match="n_chunklet_clusters"):
        C4S(4, n_chunklet_clusters=0).fit(X)
    with pytest.raises(ValueError, match="min_cluster_fraction"):
        C4S(4, min_cluster_fraction=1.5).fit(X)
    with pytest.raises(ValueError, match="progress"):
        C4S(4, progress=3).fit(X)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_clusters=2"):
        # three mutually cannot-linked points need three groups
        C4S(2, n_init=1).fit(X, cannot_link=[[0, 1], [1, 2], [0, 2]])


def test_a_removal_that_would_break_a_cannot_link_is_rolled_back() -> None:
    """With min_cluster_fraction 0.45 every cluster is "too small" for CEC, but three mutually
    cannot-linked points need three groups: the removals that would merge them are undone."""
    X, _ = _blobs(5, 30)
    cl = np.array([[0, 40], [40, 80], [0, 80]])
    model = C4S(4, min_cluster_fraction=0.45, n_init=2, random_state=0).fit(X, cannot_link=cl)
    assert model.n_clusters_ == 3
    assert np.all(model.labels_[cl[:, 0]] != model.labels_[cl[:, 1]])
    unconstrained = C4S(4, min_cluster_fraction=0.45, n_init=2, random_state=0).fit(X)
    assert unconstrained.n_clusters_ < 3
