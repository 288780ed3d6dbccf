"""The Hartigan core against the from-scratch cost: exact move deltas, tracked energies, sweeps,
cluster removal, and brute force over all partitions of tiny data sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.engine.core.cec_fit import MOVE_TOL
from app.engine.core.cec_state import ClusterState, new_state, recompute_state, total_energy
from app.engine.core.cost import cec_ib_energy
from app.engine.core.families import KERNEL_FAMILIES
from app.engine.core.hartigan import (
    SweepClock,
    dissolve_cluster,
    dissolve_invalid,
    hartigan_sweep,
    mark_all_changed,
    new_clock,
    point_move_deltas,
)
from tests.engine._support.partitions import set_partitions


def _state(
    X: np.ndarray, assign: np.ndarray, y: np.ndarray, k: int, family: int, beta: float
) -> ClusterState:
    m = int(y.max()) + 1 if (y >= 0).any() else 0
    state = new_state(k, X.shape[1], m)
    state.alive[:] = np.bincount(assign, minlength=k) > 0
    recompute_state(X, assign, y, state, family, float(X.shape[0]), beta)
    return state


EVERY = np.zeros(8, dtype=np.int64)  # changed_at with since = -1: evaluate every slot


def _data(seed: int = 0, n: int = 30, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 2.0][:d] + np.where(np.arange(n)[:, None] % 2, 3.0, 0.0)
    y = np.where(rng.random(n) < 0.5, rng.integers(0, 3, size=n), -1).astype(np.int64)
    return X, y


def _random_start(covariance: str, seed: int, n: int, k: int, beta: float):  # type: ignore[no-untyped-def]
    """Data, a random partition into k clusters (seeded by seed - 1), and its state."""
    family = KERNEL_FAMILIES[covariance]
    X, y = _data(seed=seed, n=n)
    assign = np.random.default_rng(seed - 1).integers(0, k, size=n).astype(np.int64)
    return family, X, y, assign, _state(X, assign, y, k, family, beta)


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
@pytest.mark.parametrize("beta", [0.0, 0.8])
def test_move_deltas_equal_cost_differences(covariance: str, beta: float) -> None:
    family = KERNEL_FAMILIES[covariance]
    X, y = _data()
    assign = (np.arange(30) % 3).astype(np.int64)
    state = _state(X, assign, y, 3, family, beta)
    base = cec_ib_energy(X, assign, y, beta, covariance)
    assert total_energy(state) == pytest.approx(base, rel=1e-12)
    delta = np.empty(3)
    u = np.empty(X.shape[1])
    for i in range(X.shape[0]):
        point_move_deltas(
            X, i, y[i], assign[i], state, family, 30.0, beta, math.inf, EVERY, -1, delta, u
        )
        for j in range(3):
            moved = assign.copy()
            moved[i] = j
            expected = cec_ib_energy(X, moved, y, beta, covariance) - base
            assert delta[j] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
def test_pruned_deltas_pick_the_same_move(covariance: str) -> None:
    family, X, y, assign, state = _random_start(covariance, seed=1, n=40, k=4, beta=1.0)
    exact, pruned = np.empty(4), np.empty(4)
    u = np.empty(X.shape[1])
    for i in range(40):
        a = assign[i]
        point_move_deltas(X, i, y[i], a, state, family, 40.0, 1.0, math.inf, EVERY, -1, exact, u)
        point_move_deltas(X, i, y[i], a, state, family, 40.0, 1.0, -MOVE_TOL, EVERY, -1, pruned, u)
        best = int(np.argmin(exact))
        if exact[best] < -MOVE_TOL:
            assert int(np.argmin(pruned)) == best
            assert pruned[best] == exact[best]
        else:
            assert np.all(pruned >= -MOVE_TOL)
        assert np.all(pruned >= exact - 1e-15)


def _sweep(
    X: np.ndarray, assign: np.ndarray, y: np.ndarray, state: ClusterState, family: int,
    beta: float, min_size: float, clock: SweepClock | None = None,
) -> int:  # fmt: skip
    k = state.size.shape[0]
    return hartigan_sweep(
        X, assign, y, state, family, float(X.shape[0]), beta, min_size, MOVE_TOL,
        new_clock(X.shape[0], k) if clock is None else clock, np.empty(k), np.empty(3 * X.shape[1]),
    )  # fmt: skip


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical", "unit"])
def test_tracked_energy_matches_scratch_after_a_sweep(covariance: str) -> None:
    """T1: the incrementally tracked statistics give the from-scratch cost."""
    family, X, y, assign, state = _random_start(covariance, seed=2, n=60, k=3, beta=0.7)
    moves = _sweep(X, assign, y, state, family, 0.7, 3.0)
    assert moves > 0
    tracked = total_energy(state)
    assert tracked == pytest.approx(cec_ib_energy(X, assign, y, 0.7, covariance), rel=1e-10)
    fresh = _state(X, assign, y, 3, family, 0.7)
    np.testing.assert_allclose(state.mean, fresh.mean, atol=1e-10)
    np.testing.assert_allclose(state.cov, fresh.cov, atol=1e-10)
    np.testing.assert_array_equal(state.label_counts, fresh.label_counts)


@pytest.mark.parametrize("seed", range(4))
def test_energy_never_increases_between_sweeps(seed: int) -> None:
    """Every accepted move lowers the energy, so a sweep without cluster removal does too."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + np.array([4.0, 0.0])])
    y = np.where(rng.random(80) < 0.3, (X[:, 0] > 2).astype(int), -1).astype(np.int64)
    assign = rng.integers(0, 5, size=80).astype(np.int64)
    state = _state(X, assign, y, 5, 0, 1.0)
    energies = [total_energy(state)]
    alive = [int(state.alive.sum())]
    for _ in range(30):
        moves = _sweep(X, assign, y, state, 0, 1.0, 4.0)
        recompute_state(X, assign, y, state, 0, 80.0, 1.0)
        energies.append(total_energy(state))
        alive.append(int(state.alive.sum()))
        if moves == 0:
            break
    assert moves == 0
    for before, after, n_before, n_after in zip(
        energies, energies[1:], alive, alive[1:], strict=False
    ):
        if n_before == n_after:
            assert after <= before + 1e-12
    assert energies[-1] < energies[0]


@pytest.mark.parametrize("seed", range(3))
def test_skipping_unchanged_checks_gives_the_same_sweeps(seed: int) -> None:
    """The SweepClock only skips evaluations whose result cannot have changed: the trajectory
    equals that of sweeps that re-evaluate every point against every cluster."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) * 0.5 + 2.5])
    y = np.where(rng.random(100) < 0.3, (X[:, 0] > 1.5).astype(int), -1).astype(np.int64)
    start = rng.integers(0, 6, size=100).astype(np.int64)
    runs = []
    for skipping in (True, False):
        assign = start.copy()
        state = _state(X, assign, y, 6, 0, 0.5)
        clock = new_clock(100, 6)
        trajectory = []
        for _ in range(40):
            moves = _sweep(X, assign, y, state, 0, 0.5, 5.0, clock if skipping else None)
            recompute_state(X, assign, y, state, 0, 100.0, 0.5)
            trajectory.append((moves, assign.copy()))
            if moves == 0:
                break
        runs.append(trajectory)
    assert len(runs[0]) == len(runs[1]) >= 3
    for (m0, a0), (m1, a1) in zip(runs[0], runs[1], strict=True):
        assert m0 == m1
        np.testing.assert_array_equal(a0, a1)


def test_clock_skips_points_with_nothing_changed() -> None:
    X, y = _data(seed=7, n=40)
    assign = (np.arange(40) % 2).astype(np.int64)
    state = _state(X, assign, y, 2, 0, 0.0)
    clock = new_clock(40, 2)
    while _sweep(X, assign, y, state, 0, 0.0, 4.0, clock):
        recompute_state(X, assign, y, state, 0, 40.0, 0.0)
    # converged: every point was checked after the last change of every live cluster
    assert clock.changed_at[state.alive].max() <= clock.checked_at.min()
    mark_all_changed(clock)
    assert clock.changed_at.min() > clock.checked_at.max()


def test_dissolve_cluster_leaves_no_orphans() -> None:
    X, y = _data(seed=3, n=45)
    assign = (np.arange(45) % 3).astype(np.int64)
    state = _state(X, assign, y, 3, 0, 1.0)
    dissolve_cluster(X, assign, y, state, 1, 0, 45.0, 1.0, np.empty(6))
    assert set(np.unique(assign)) == {0, 2}
    assert not state.alive[1]
    assert state.size[[0, 2]].sum() == 45
    assert total_energy(state) == pytest.approx(cec_ib_energy(X, assign, y, 1.0), rel=1e-10)


def test_dissolve_cluster_reinserts_greedily() -> None:
    """Decision 7.3: each orphan goes, in index order, where the energy grows least."""
    X, y = _data(seed=4, n=36)
    assign = (np.arange(36) % 3).astype(np.int64)
    expected = assign.copy()
    for i in np.flatnonzero(assign == 2):
        costs = []
        for j in (0, 1):
            trial = expected.copy()
            trial[i] = j
            keep = trial != 2  # later orphans are not placed yet
            costs.append(cec_ib_energy(X[keep], trial[keep], y[keep], 1.0, "full"))
        expected[i] = int(np.argmin(costs))
    state = _state(X, assign, y, 3, 0, 1.0)
    dissolve_cluster(X, assign, y, state, 2, 0, 36.0, 1.0, np.empty(6))
    np.testing.assert_array_equal(assign, expected)


def test_dissolve_invalid_removes_small_and_singular_clusters() -> None:
    X, y = _data(seed=5, n=30)
    X[:3] = [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]  # a collinear cluster of 3 points: singular
    assign = np.r_[[2, 2, 2], np.arange(27) % 2].astype(np.int64)
    assign[3] = 3  # a one-point cluster
    state = _state(X, assign, y, 4, 0, 1.0)
    assert not math.isfinite(state.entropy[2])
    removed = dissolve_invalid(X, assign, y, state, 0, 30.0, 1.0, 4.0, np.empty(6))
    assert removed == 2
    assert set(np.unique(assign)) == {0, 1}
    nothing_valid = dissolve_invalid(X, assign, y, state, 0, 30.0, 1.0, 100.0, np.empty(6))
    assert nothing_valid == -1


def test_state_energy_agrees_with_reference_on_every_partition() -> None:
    """Brute force: the optimiser's energy equals eq. (10) for all 4140 partitions of 8 points."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(8, 1))
    y = np.array([0, -1, 1, 0, -1, 1, 1, -1], dtype=np.int64)
    count = 0
    for labels in set_partitions(8):
        assign = np.array(labels, dtype=np.int64)
        k = int(assign.max()) + 1
        state = _state(X, assign, y, k, 2, 0.9)
        reference = cec_ib_energy(X, assign, y, 0.9, "spherical")
        if math.isfinite(reference):
            assert total_energy(state) == pytest.approx(reference, rel=1e-12, abs=1e-12)
        else:
            assert not np.isfinite(state.energy[state.alive]).all()
        count += 1
    assert count == 4140
