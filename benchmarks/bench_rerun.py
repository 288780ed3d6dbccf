"""How much a re-run redraws the clusters in the expert's loop: fresh PPC fits against fits that
continue the last one (``warm_start``, what the workspace's Live re-runs ask for).

The loop is bench_active's ``ours``: a simulated expert answers our questions one at a time and
PPC re-runs every ``--refit`` answers up to 100. Per data set and mode it prints the mean share of
items that change cluster per re-run (clusters matched as the runner numbers them,
``numbering_like``), the share of re-runs that move more than 5 % of the items, the mean seconds
per re-run, and the ARI after 10, 25, 50 and 100 answers (mean over ``--draws``).

    .venv/bin/python -m benchmarks.bench_rerun [--data digits breast_cancer] [--draws 10]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from app.engine.core.numbering import numbering_like
from benchmarks.bench_active import (
    BUDGETS,
    LOADERS,
    Clusterer,
    Continuing,
    Pairs,
    cluster,
    dataset,
    ours,
    subsample,
)

MOVED = 0.05  # a re-run that moves more than this share of the items redraws the picture


def moved_share(old: NDArray[np.int64], new: NDArray[np.int64]) -> float:
    """The share of items whose cluster differs once ``new`` is numbered like ``old``."""
    order = numbering_like(new, old)
    return float(np.mean(order[new] != old))


def timed(fit: Clusterer, seconds: list[float]) -> Clusterer:
    def run(X: NDArray[np.float64], k: int, links: Pairs, seed: int) -> NDArray[np.int64]:
        started = time.perf_counter()
        labels = fit(X, k, links, seed)
        seconds.append(time.perf_counter() - started)
        return labels

    return run


def measure(
    name: str, make: Callable[[], Clusterer], draws: int, refit: int
) -> tuple[list[float], list[float], list[float]]:
    """(moved shares per re-run, seconds per fit, mean ARI per budget) over the draws."""
    X0, y0 = dataset(name)
    k = len(np.unique(y0))
    moved: list[float] = []
    seconds: list[float] = []
    scores = []
    for seed in range(draws):
        X, y = subsample(X0, y0, 0.9, seed)

        def record(old: NDArray[np.int64], new: NDArray[np.int64]) -> None:
            moved.append(moved_share(old, new))

        scores.append(ours(X, y, k, seed, refit, timed(make(), seconds), record))
    return moved, seconds, np.mean(scores, axis=0).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--refit", type=int, default=5, help="answers per re-run")
    args = parser.parse_args()
    modes: dict[str, Callable[[], Clusterer]] = {"fresh": lambda: cluster, "continued": Continuing}
    print(
        "| data | re-runs | items moved per re-run | re-runs moving > 5 % | s per fit | "
        + " | ".join(f"ARI@{b}" for b in BUDGETS)
        + " |"
    )
    print("|" + "---|" * (len(BUDGETS) + 5))
    for name in args.data:
        for mode, make in modes.items():
            moved, seconds, ari = measure(name, make, args.draws, args.refit)
            share = np.asarray(moved)
            cells = " | ".join(f"{v:.3f}" for v in ari)
            print(
                f"| {name} | {mode} | {100 * share.mean():.1f} % | "
                f"{100 * np.mean(share > MOVED):.0f} % | {np.mean(seconds):.2f} | {cells} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
