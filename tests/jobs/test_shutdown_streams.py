"""A server stopping with progress streams open tells each stream (a `shutdown` event with a
reconnection delay) and ends within its grace period, instead of waiting for the runs and then
cutting the streams without a word. On the real `python -m app serve`, stopped by SIGTERM
(benchmarks/bench_shutdown.py times it with 100 streams)."""

import re
from pathlib import Path

from app.__main__ import SHUTDOWN_GRACE_S
from app.jobs.execute.executors import EXECUTOR_GRACE_S
from benchmarks.bench_shutdown import stop_with_streams

STREAMS = 20
# What compose gives the app to stop (docker-compose.yml, stop_grace_period).
STOP_DEADLINE_S = 30


def test_open_streams_are_told_and_the_server_stops_in_its_grace_period() -> None:
    stopped_after, streams, log = stop_with_streams(STREAMS, deadline_s=STOP_DEADLINE_S)
    assert all(not thread.is_alive() for thread in streams.threads)
    for k, seen in enumerate(streams.events):
        assert seen[0] == "event: progress", (k, seen)
        assert seen[-2:] == ["event: shutdown", "retry: 3000"], (k, seen)
    assert streams.told() == STREAMS
    assert "timeout graceful shutdown exceeded" not in log
    assert stopped_after < STOP_DEADLINE_S


def test_compose_gives_the_app_longer_to_stop_than_it_takes() -> None:
    """Docker kills a container still running after its stop_grace_period (10 s by default):
    the app's service must allow the server's grace plus the runs' own."""
    compose = (Path(__file__).parents[2] / "docker-compose.yml").read_text()
    app_service = compose.split("\n  app:\n", 1)[1].split("\nvolumes:", 1)[0]
    (grace,) = re.findall(r"^    stop_grace_period: (\d+)s$", app_service, flags=re.MULTILINE)
    assert int(grace) >= STOP_DEADLINE_S > SHUTDOWN_GRACE_S + EXECUTOR_GRACE_S
