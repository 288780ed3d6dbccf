"""The active-questions benchmark's paired comparison (benchmarks/bench_active.py)."""

import numpy as np
import pytest

from benchmarks.bench_active import paired_difference


def test_paired_difference_is_the_mean_and_standard_error_of_per_draw_differences() -> None:
    ours = [[0.5, 0.9], [0.7, 0.8], [0.6, 1.0]]
    peer = [[0.4, 0.9], [0.5, 0.9], [0.6, 0.7]]
    mean, error = paired_difference(ours, peer)
    differences = np.array([[0.1, 0.0], [0.2, -0.1], [0.0, 0.3]])
    np.testing.assert_allclose(mean, [0.1, 0.2 / 3])
    np.testing.assert_allclose(error, differences.std(axis=0, ddof=1) / np.sqrt(3))


def test_a_shared_swing_cancels_in_the_pairing() -> None:
    """Both strategies swing together from draw to draw: the paired error is that of the
    constant gap, zero, however large the swing."""
    swing = np.array([0.2, 0.6, 0.4, 0.9])
    mean, error = paired_difference((swing + 0.05)[:, None].tolist(), swing[:, None].tolist())
    assert mean[0] == pytest.approx(0.05)
    assert error[0] == pytest.approx(0.0, abs=1e-12)


def test_one_draw_has_no_standard_error() -> None:
    mean, error = paired_difference([[0.6]], [[0.5]])
    assert mean[0] == pytest.approx(0.1)
    assert np.isnan(error[0])
