"""`benchmarks._limits.within`: the measured call runs in a child, after its warm-up."""

from __future__ import annotations

from pathlib import Path

from benchmarks._limits import within


def test_warm_up_runs_in_the_child_before_the_measured_call(tmp_path: Path) -> None:
    marker = tmp_path / "warmed"
    run = within(marker.exists, 60.0, warm=marker.touch)
    assert run.value is True
    assert marker.exists()  # the child shares the file system, not the parent's memory


def test_without_warm_up_the_call_runs_alone(tmp_path: Path) -> None:
    run = within((tmp_path / "warmed").exists, 60.0)
    assert run.value is False
    assert run.seconds >= 0.0 and run.peak_mib > 0.0
