"""benchmarks/bench_rerun.py: the share of items a re-run moves, and its loop end to end."""

import numpy as np
import pytest

from benchmarks.bench_rerun import measure, moved_share


def test_moved_share_matches_clusters_before_counting() -> None:
    old = np.array([0, 0, 1, 1, 2, 2])
    assert moved_share(old, np.array([2, 2, 0, 0, 1, 1])) == 0.0  # renamed only
    assert moved_share(old, np.array([1, 1, 0, 0, 2, 0])) == 1 / 6  # one item moved


@pytest.mark.parametrize("mode", ["continued", "loop"])
def test_the_loop_measures_every_rerun_of_a_draw(mode: str) -> None:
    moved, seconds, ari = measure("iris", "ppc", mode, draws=1, refit=25)
    assert len(moved) == 5  # re-runs at 10 (a budget), 25, 50, 75 and 100 answers
    assert len(seconds) == 6  # and the first fit
    assert all(0.0 <= m <= 1.0 for m in moved)
    assert len(ari) == 4 and ari[-1] >= 0.9  # 100 answers on iris


@pytest.mark.parametrize("mode", ["continued", "loop"])
def test_the_labeling_loop_continues_cec_ib_and_measures_every_rerun(mode: str) -> None:
    moved, seconds, ari = measure("iris", "cec-ib", mode, draws=1, refit=25)
    assert len(moved) == 3  # re-runs at 50, 75 and 100 labels
    assert len(seconds) == 4  # and the first fit, at 25
    assert all(0.0 <= m <= 1.0 for m in moved)
    assert len(ari) == 3 and ari[-1] >= 0.8  # ARI at 25, 50 and 100 labels on iris
