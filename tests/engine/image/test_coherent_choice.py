"""MostCoherentFit keeps the candidate with the fewest stray items (labeled unlike most of their
links); the stray fraction is checked against a brute-force count on small grids."""

from typing import Any

import numpy as np
import pytest

from app.engine.core.cec_fit import ASK_ONLY
from app.engine.image import grid_links
from app.engine.image.coherent_choice import MostCoherentFit, SharedProgress, stray_fraction


class FixedLabels:
    """A stand-in estimator whose fit gives known labels and records what it was given."""

    def __init__(self, labels: np.ndarray) -> None:
        self.given = labels
        self.seen: tuple[Any, ...] = ()

    def fit(self, x: Any, *args: Any, **kwargs: Any) -> "FixedLabels":
        self.seen = (x, args, kwargs)
        self.labels_ = self.given
        return self


def brute_force(grid: np.ndarray) -> float:
    height, width = grid.shape
    stray = 0
    for r in range(height):
        for c in range(width):
            neighbours = [
                grid[r + dr, c + dc]
                for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))
                if 0 <= r + dr < height and 0 <= c + dc < width
            ]
            stray += sum(v != grid[r, c] for v in neighbours) > len(neighbours) / 2
    return stray / grid.size


@pytest.mark.parametrize("seed", range(5))
def test_uniform_links_on_a_grid_give_the_brute_force_fraction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    grid = rng.integers(0, 3, size=(5, 7))
    pairs, weights = grid_links(5, 7, 1.0)
    assert stray_fraction(grid.ravel(), pairs, weights) == pytest.approx(brute_force(grid))


def test_weights_count_each_link_by_its_weight() -> None:
    labels = np.array([0, 0, 1])
    pairs = np.array([[0, 1], [1, 2]])
    # Item 1 has links of weight 3 (same) and 1 (different): not stray; item 2 is.
    assert stray_fraction(labels, pairs, np.array([3.0, 1.0])) == pytest.approx(1 / 3)
    assert stray_fraction(labels, pairs, np.array([1.0, 3.0])) == pytest.approx(2 / 3)
    assert stray_fraction(labels, np.empty((0, 2)), np.empty(0)) == 0.0
    with pytest.raises(ValueError, match="2 pairs but 1 weights"):
        stray_fraction(labels, pairs, np.array([1.0]))


def test_the_candidate_with_fewer_stray_items_is_kept() -> None:
    pairs, weights = grid_links(4, 4, 1.0)
    halves = np.repeat([0, 1], 8)  # two contiguous halves: no item is stray
    speckle = np.indices((4, 4)).sum(axis=0).ravel() % 2  # a checkerboard: every item is
    noisy, clean = FixedLabels(speckle), FixedLabels(halves)
    chooser = MostCoherentFit([noisy, clean], ["full", "diagonal"], pairs, weights)
    x = np.zeros((16, 2))
    assert chooser.fit(x, np.arange(16), y=5) is chooser
    assert chooser.best_estimator_ is clean
    np.testing.assert_array_equal(chooser.labels_, halves)
    assert chooser.choice_ == {
        "chosen": "diagonal",
        "stray_fraction": {"full": 1.0, "diagonal": 0.0},
    }
    for candidate in (noisy, clean):  # every candidate saw the same inputs
        assert candidate.seen[0] is x and candidate.seen[2] == {"y": 5}


def test_a_shrunken_region_is_not_more_coherent() -> None:
    """A disc and the same disc at half the radius: the smaller has a shorter boundary (fewer
    disagreeing links, the rule before 2026-11-25 kept it) but neither has stray pixels, so the
    first candidate stays."""
    side = 40
    rows, cols = np.indices((side, side))
    distance = np.hypot(rows - side / 2, cols - side / 2)
    whole, shrunk = FixedLabels((distance < 14).ravel()), FixedLabels((distance < 7).ravel())
    pairs, weights = grid_links(side, side, 1.0)
    chooser = MostCoherentFit([whole, shrunk], ["full", "diagonal"], pairs, weights)
    assert chooser.fit(np.zeros((side * side, 1))).choice_["chosen"] == "full"


def test_a_tie_keeps_the_first_candidate() -> None:
    pairs, weights = grid_links(2, 2, 1.0)
    first, second = FixedLabels(np.array([0, 0, 1, 1])), FixedLabels(np.array([0, 1, 0, 1]))
    chooser = MostCoherentFit([first, second], ["a", "b"], pairs, weights).fit(np.zeros((4, 1)))
    assert chooser.best_estimator_ is first and chooser.choice_["chosen"] == "a"


def test_a_later_candidate_must_be_clearly_more_coherent() -> None:
    pairs, weights = grid_links(1, 11, 1.0)  # a row of 11 items
    two_specks = FixedLabels(np.array([0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]))
    one_speck = FixedLabels(np.array([0] * 5 + [1] + [0] * 5))
    x = np.zeros((11, 1))
    strict = MostCoherentFit([two_specks, one_speck], ["a", "b"], pairs, weights, margin=0.6)
    assert strict.fit(x).choice_["chosen"] == "a"  # 1/11 is not below 0.4 * 2/11
    loose = MostCoherentFit([two_specks, one_speck], ["a", "b"], pairs, weights, margin=0.4)
    assert loose.fit(x).choice_["chosen"] == "b"  # 1/11 is below 0.6 * 2/11


def test_candidates_and_names_must_match() -> None:
    pairs, weights = grid_links(2, 2, 1.0)
    with pytest.raises(ValueError, match="one name per candidate"):
        MostCoherentFit([FixedLabels(np.zeros(4))], ["a", "b"], pairs, weights)
    with pytest.raises(ValueError, match="one name per candidate"):
        MostCoherentFit([], [], pairs, weights)
    with pytest.raises(ValueError, match="margin must be in"):
        MostCoherentFit([FixedLabels(np.zeros(4))], ["a"], pairs, weights, margin=1.0)


class Failing:
    def fit(self, x: Any, *args: Any, **kwargs: Any) -> "Failing":
        raise ValueError("this candidate cannot fit")


def test_candidates_fitted_in_threads_choose_as_one_at_a_time() -> None:
    """Real CEC-IB candidates on a small two-region image with scribbles: the same choice,
    labels and energies whether fitted one after another or at once."""
    from app.engine import CECIB

    rng = np.random.default_rng(0)
    side = 20
    truth = (np.indices((side, side))[1] >= side // 2).astype(int).ravel()
    x = np.stack([truth * 2.0, truth * 1.0], axis=1) + rng.normal(0, 0.7, (side * side, 2))
    y = np.full(side * side, -1)
    y[::17] = truth[::17]
    pairs, weights = grid_links(side, side, 1.0)

    def chooser(n_jobs: int | None) -> MostCoherentFit:
        candidates = [
            CECIB(n_clusters=2, covariance=c, n_init=2, random_state=0)
            for c in ("full", "diagonal")
        ]
        return MostCoherentFit(candidates, ["full", "diagonal"], pairs, weights, n_jobs=n_jobs)

    one_by_one, at_once = chooser(1).fit(x, y), chooser(2).fit(x, y)
    assert one_by_one.choice_ == at_once.choice_
    np.testing.assert_array_equal(one_by_one.labels_, at_once.labels_)
    for a, b in zip(one_by_one.candidates, at_once.candidates, strict=True):
        assert a.energy_ == b.energy_


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_failing_candidate_fails_the_fit(n_jobs: int) -> None:
    pairs, weights = grid_links(2, 2, 1.0)
    chooser = MostCoherentFit(
        [FixedLabels(np.zeros(4)), Failing()], ["a", "b"], pairs, weights, n_jobs=n_jobs
    )
    with pytest.raises(ValueError, match="cannot fit"):
        chooser.fit(np.zeros((4, 1)))
    with pytest.raises(ValueError, match="n_jobs"):
        MostCoherentFit([FixedLabels(np.zeros(4))], ["a"], pairs, weights, n_jobs=0)


class Scripted(FixedLabels):
    """A stand-in that reports sweeps 1..sweeps to its ``progress`` while fitting and stops
    when told to (as the engine does)."""

    def __init__(self, labels: np.ndarray, sweeps: int, progress: Any) -> None:
        super().__init__(labels)
        self.sweeps, self.progress, self.done = sweeps, progress, 0

    def fit(self, x: Any, *args: Any, **kwargs: Any) -> "Scripted":
        for sweep in range(1, self.sweeps + 1):
            self.done = sweep
            answer = self.progress(sweep, float(-sweep))
            if answer is not None and not answer:
                break
        return super().fit(x, *args, **kwargs)  # type: ignore[return-value]


def test_candidates_sharing_a_callback_report_one_count_that_never_goes_back() -> None:
    """One after another, the second candidate used to report from sweep 1 again (the run's bar
    went back); each candidate now fills its half of the count."""
    pairs, weights = grid_links(2, 2, 1.0)
    seen: list[tuple[int, float]] = []

    def record(iteration: int, energy: float) -> None:
        seen.append((iteration, energy))

    first, second = Scripted(np.zeros(4), 5, record), Scripted(np.zeros(4), 3, record)
    MostCoherentFit([first, second], ["a", "b"], pairs, weights, n_jobs=1).fit(np.zeros((4, 1)))
    assert [i for i, _ in seen] == [0, 1, 1, 2, 2, 3, 3, 4]  # (5 + s) // 2 for s = 1..3
    assert [e for _, e in seen] == [-1.0, -2.0, -3.0, -4.0, -5.0, -1.0, -2.0, -3.0]
    assert first.progress is record and second.progress is record  # put back


def _scribbled_halves(side: int = 24) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    rng = np.random.default_rng(0)
    truth = (np.indices((side, side))[1] >= side // 2).astype(int).ravel()
    x = np.stack([truth * 2.0, truth * 1.0], axis=1) + rng.normal(0, 0.9, (side * side, 2))
    y = np.full(side * side, -1)
    y[::17] = truth[::17]
    pairs, weights = grid_links(side, side, 1.0)
    return x, y, pairs, weights


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_real_candidates_fitted_at_once_report_a_non_decreasing_count(n_jobs: int) -> None:
    from app.engine import CECIB

    x, y, pairs, weights = _scribbled_halves()
    seen: list[int] = []

    def record(iteration: int, energy: float) -> bool:
        seen.append(iteration)
        return True

    def candidates() -> list[Any]:
        return [
            CECIB(n_clusters=4, covariance=c, n_init=2, random_state=0, progress=record)
            for c in ("full", "diagonal")
        ]

    alone = []  # each candidate's sweeps (over all its starts) when fitted by itself
    for candidate in candidates():
        candidate.fit(x, y)
        alone.append(seen[-1])
        seen.clear()
    together = candidates()
    MostCoherentFit(together, ["full", "diagonal"], pairs, weights, n_jobs=n_jobs).fit(x, y)
    assert seen == sorted(seen)
    assert len(seen) == sum(alone)  # every sweep reported once
    assert seen[-1] == sum(alone) // 2  # the mean of the candidates' sweeps
    assert all(c.progress is record for c in together)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cancelling_through_one_candidate_stops_every_candidate(n_jobs: int) -> None:
    pairs, weights = grid_links(2, 2, 1.0)
    calls: list[int] = []

    def stop_at_third(iteration: int, energy: float) -> bool:
        calls.append(iteration)
        return len(calls) < 3

    first, second = (Scripted(np.zeros(4), 50, stop_at_third) for _ in range(2))
    chooser = MostCoherentFit([first, second], ["a", "b"], pairs, weights, n_jobs=n_jobs)
    chooser.fit(np.zeros((4, 1)))
    assert len(calls) == 3  # after the False, candidates are told to stop without asking again
    assert first.done + second.done <= 3 + 1  # each stopped at its next sweep


def test_a_question_passes_through_the_shared_callback_as_a_question() -> None:
    """ASK_ONLY (CEC-IB's weight search) is no sweep: the shared count does not move, the
    question reaches the run's callback as it is, and a stop answers every candidate."""
    received: list[int] = []

    def progress(iteration: int, energy: float) -> bool:
        received.append(iteration)
        return iteration != ASK_ONLY or len(received) < 3

    shared = SharedProgress(progress, 2)
    first, second = shared.relay(0), shared.relay(1)
    assert first(4, 1.0) and first(ASK_ONLY, float("nan"))
    assert shared.sweeps == [4, 0] and received == [2, ASK_ONLY]
    assert second(ASK_ONLY, float("nan")) is False  # the run said stop
    assert first(5, 0.5) is False and received == [2, ASK_ONLY, ASK_ONLY]
