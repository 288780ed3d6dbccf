"""What a newcomer waits for on a fresh install: numba compiling the engine's kernels.

Two measurements, each with an empty numba cache (a fresh NUMBA_CACHE_DIR):

1. ``kernels``: every method's first fit, one after another in a fresh process (seconds per
   method), and the wall time of ``workbench warm-cache``, which compiles them in child
   processes two at a time (what the server's start-up warm-up and the Docker build do).
2. ``server``: ``python -m app serve`` on a fresh database with the demo data: seconds until
   ``/health`` answers, then seconds from there until a CEC-IB run on iris (n_clusters 3,
   otherwise the API's defaults) has succeeded, with the warm-up running as it does for a
   user. The run's stage is sampled: "preparing" until the engine is ready.

    .venv/bin/python -m benchmarks.bench_cold_start            # both
    .venv/bin/python -m benchmarks.bench_cold_start --part kernels

Targets (issue 36): the first CEC-IB run within 15 s of /health, all kernels under 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks._server import live_server


def kernels() -> dict[str, float]:
    """Seconds per method of a cold in-process ``warm_numba_cache`` (one after another), and
    the wall time of ``workbench warm-cache`` (child processes, two at a time: what the server
    and the Docker build run), each with its own empty cache."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        code = (
            "import json; from app.jobs.warmup.warm_cache import warm_numba_cache; "
            "print(json.dumps(warm_numba_cache()))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**env, "NUMBA_CACHE_DIR": cache},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        seconds: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "app", "warm-cache"],
            env={**env, "NUMBA_CACHE_DIR": cache},
            check=True,
            capture_output=True,
        )
        seconds["workbench warm-cache (2 child processes), wall"] = time.perf_counter() - started
    return seconds


def _demo_iris(base: str, headers: dict[str, str]) -> dict[str, object]:
    """The demo project's iris dataset (loaded at start-up)."""
    for project in httpx.get(f"{base}/projects", headers=headers).json()["items"]:
        page = httpx.get(f"{base}/projects/{project['id']}/datasets", headers=headers).json()
        for dataset in page["items"]:
            if "iris" in str(dataset["name"]).lower():
                return dict(dataset)
    raise RuntimeError("no demo iris dataset")


def server() -> dict[str, float | str]:
    """Seconds to /health and from /health to a succeeded CEC-IB run on iris, cold."""
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as name:
        workdir = Path(name)
        cold = {"NUMBA_CACHE_DIR": str(workdir / "numba"), "LOAD_DEMO_DATA": "true"}
        with live_server(**cold, DATA_DIR=str(workdir / "var")) as live:
            base, headers = live.base, live.headers
            iris = _demo_iris(base, headers)
            asked = time.perf_counter()
            run = httpx.post(
                f"{base}/runs",
                json={"dataset_id": iris["id"], "algorithm": "cec-ib", "params": {"n_clusters": 3}},
                headers=headers,
            ).json()
            stages: list[str] = []
            while run["status"] in ("queued", "running"):
                time.sleep(0.2)
                run = httpx.get(f"{base}/runs/{run['id']}", headers=headers).json()
                if run.get("stage") and (not stages or stages[-1] != run["stage"]):
                    stages.append(run["stage"])
            warm_up = [ln for ln in live.log.read_text().splitlines() if "warm_children" in ln]
            return {
                "warm-up children (server log)": "; ".join(ln.split(": ", 1)[-1] for ln in warm_up),
                "to /health": live.seconds_to_health,
                "health to CEC-IB on iris succeeded": time.perf_counter() - asked,
                "status": run["status"],
                "stages seen": " -> ".join(stages) or "(none)",
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("kernels", "server", "all"), default="all")
    part = parser.parse_args().part
    if part in ("kernels", "all"):
        seconds = kernels()
        total = sum(v for k, v in seconds.items() if not k.startswith("workbench"))
        print("| method | first fit, empty cache (s) |\n|---|---|")
        for method, value in seconds.items():
            print(f"| {method} | {value:.1f} |")
        print(f"| all methods, one after another | {total:.1f} |")
        print("(target: compiling every method's kernels under 60 s)")
    if part in ("server", "all"):
        result = server()
        print("\n| server, empty cache | value |\n|---|---|")
        for measure, shown in result.items():
            cell = f"{shown:.1f} s" if isinstance(shown, float) else shown
            print(f"| {measure} | {cell} |")
        print("(target: the CEC-IB run within 15 s of /health)")


if __name__ == "__main__":
    main()
