"""CEC-IB warm starts: the previous partition is one more start under the usual rule
(agreement with the labels when there is one cluster per category, then the lowest energy;
exact ties keep it), so it can only improve on the fresh starts, which it leaves unchanged."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from app.engine import CECIB
from app.engine.core.label_seeding import labeled_agreement


def _blobs(seed: int, per_blob: int = 30) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    X = np.concatenate([c + rng.standard_normal((per_blob, 2)) for c in centres])
    return X, np.repeat(np.arange(3), per_blob)


def _partial(y: np.ndarray, share: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.full(y.shape, -1)
    shown = rng.random(y.shape[0]) < share
    labels[shown] = y[shown]
    return labels


def test_a_refit_on_the_same_labels_continues_its_own_partition() -> None:
    X, y = _blobs(0)
    labels = _partial(y, 0.1, 0)
    model = CECIB(3, random_state=0, warm_start=True).fit(X, labels)
    first, energy = model.labels_.copy(), model.energy_
    assert model.warm_started_ is False  # nothing to continue yet
    model.fit(X, labels)
    assert model.warm_started_ is True  # the fresh starts end where it did: a tie it keeps
    np.testing.assert_array_equal(model.labels_, first)
    assert model.energy_ == pytest.approx(energy)


@pytest.mark.parametrize("seed", range(6))
def test_the_warm_start_adds_a_start_and_changes_no_fresh_one(seed: int) -> None:
    """Against the same fit without it (same seed, so the same fresh starts): never a higher
    energy (nor lower agreement, with one cluster per category); a fresh winner is the very
    same result; a kept warm start is at least as good as every fresh one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((60, 2)) * [3.0, 1.0]
    y = rng.integers(0, 3, 60)
    labels = _partial(y, 0.2, seed)
    warm = rng.integers(0, 3, 60)
    for k in (3, 4):  # one cluster per category (agreement first), and one more (energy only)
        fresh = CECIB(k, n_init=3, min_cluster_fraction=0.0, random_state=seed).fit(X, labels)
        model = CECIB(k, n_init=3, min_cluster_fraction=0.0, random_state=seed).start_from(warm)
        model.fit(X, labels)
        if k == 3:
            ours = labeled_agreement(model.labels_, labels, k, 3)
            theirs = labeled_agreement(fresh.labels_, labels, k, 3)
            assert ours >= theirs
            if ours > theirs:
                continue
        assert model.energy_ <= fresh.energy_ + 1e-12
        if not model.warm_started_:
            np.testing.assert_array_equal(model.labels_, fresh.labels_)


def test_a_better_previous_partition_survives_fresh_starts_that_miss_it() -> None:
    """One random-labels start often ends in a worse local optimum than the blobs; continued
    from the blobs, the fit keeps them."""
    X, y = _blobs(1)
    missed = []
    for seed in range(30):
        fresh = CECIB(3, n_init=1, init="random", random_state=seed, polish=False).fit(X)
        if adjusted_rand_score(y, fresh.labels_) < 0.9:
            missed.append((seed, fresh.energy_))
    assert missed, "no single random start missed the blobs; the test needs one that does"
    for seed, energy in missed:
        model = CECIB(3, n_init=1, init="random", random_state=seed, polish=False).start_from(y)
        model.fit(X)
        assert model.warm_started_ is True
        assert adjusted_rand_score(y, model.labels_) >= 0.9  # what the missed starts did not reach
        assert model.energy_ < energy


def test_labels_decide_before_energy_so_a_contradicted_partition_is_left() -> None:
    """Four blobs on a wide rectangle: left | right has the lower cost, but the labels say top
    | bottom. Continued from left | right, the fit still follows the labels."""
    rng = np.random.default_rng(2)
    corners = np.array([[-6.0, -2.0], [6.0, -2.0], [-6.0, 2.0], [6.0, 2.0]])
    X = np.concatenate([c + 0.5 * rng.standard_normal((25, 2)) for c in corners])
    top = (X[:, 1] > 0).astype(np.int64)
    right = (X[:, 0] > 0).astype(np.int64)
    labels = np.full(100, -1)
    labels[::10] = top[::10]  # ten labels, some in every blob
    model = CECIB(2, init="labels", random_state=0).start_from(right)
    model.fit(X, labels)
    assert model.warm_started_ is False
    assert adjusted_rand_score(top, model.labels_) == 1.0


def test_what_cannot_be_continued_starts_afresh() -> None:
    X, y = _blobs(3)
    fresh = CECIB(2, random_state=0).fit(X)
    # more clusters than n_clusters; another number of rows; warm_start off
    for model in (
        CECIB(2, random_state=0).start_from(y),
        CECIB(2, random_state=0).start_from(np.zeros(len(y) + 1, dtype=np.int64)),
        CECIB(2, random_state=0).start_from(y % 2).set_params(warm_start=False),
    ):
        model.fit(X)
        assert model.warm_started_ is False
        np.testing.assert_array_equal(model.labels_, fresh.labels_)
    # only which rows share a cluster counts: ids 5 and 9 are the two clusters 0 and 1
    side = X[:, 0] > 2.0
    renamed = CECIB(2, random_state=0).start_from(np.where(side, 9, 5)).fit(X)
    plain = CECIB(2, random_state=0).start_from(side.astype(np.int64)).fit(X)
    np.testing.assert_array_equal(renamed.labels_, plain.labels_)
    assert renamed.warm_started_ == plain.warm_started_


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((3, 2), dtype=np.int64), "one integer per row"),
        (np.array([0.5, 1.0]), "one integer per row"),
        (np.array([0, -1, 1]), ">= 0"),
    ],
)
def test_start_from_refuses_what_is_not_a_partition(bad: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CECIB(2).start_from(bad)
