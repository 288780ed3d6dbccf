"""How much a re-run redraws the clusters in the expert's loop: fresh fits against fits that
continue the last one (``warm_start``, what the workspace's Live re-runs ask for).

Two loops (``--method``):

* ``ppc``: bench_active's ``ours``, a simulated expert answers our pair questions one at a time
  and PPC re-runs every ``--refit`` answers up to 100;
* ``cec-ib``: the expert labels items in a random order (the true class) and CEC-IB, as the
  service runs it on a table (one cluster per class, ``labeled_weight='auto'``), re-runs every
  ``--refit`` labels up to 100.

Modes: ``fresh`` fits, ``continued`` (warm starts beside every fresh start) and ``loop``
(continued, fresh starts only when the continued fit agrees with the annotations less than the
last fit did: ``fresh_starts='if_worse'``, what the service's Live re-runs do since issue 38).
Per data set and mode it prints the mean share of items that change cluster per re-run
(clusters matched as the runner numbers them, ``numbering_like``), the share of re-runs that
move more than 5 % of the items, the mean seconds per re-run, and the ARI after 10, 25, 50 and
100 answers (mean over ``--draws``).

    .venv/bin/python -m benchmarks.bench_rerun [--method ppc cec-ib] [--data digits] [--draws 10]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import ParamSpec

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import adjusted_rand_score

from app.engine import CECIB
from app.engine.core.numbering import numbering_like
from benchmarks.bench_active import (
    BUDGETS,
    LOADERS,
    Clusterer,
    Continuing,
    Recorder,
    cluster,
    dataset,
    ours,
    subsample,
)

P = ParamSpec("P")
MOVED = 0.05  # a re-run that moves more than this share of the items redraws the picture
# (X, k, labels with -1 for unlabeled, seed) -> cluster of every item
LabelClusterer = Callable[[NDArray[np.float64], int, NDArray[np.int64], int], NDArray[np.int64]]


def cec_ib(warm_start: bool, fresh_starts: str = "always") -> LabelClusterer:
    """CEC-IB as a table run fits it; with ``warm_start`` one estimator for the whole loop,
    so each re-run continues the last partition (``fresh_starts='if_worse'``: as the service's
    Live re-runs, fresh starts only when the continued fit agrees with the labels less)."""
    model: CECIB | None = None

    def fit(
        X: NDArray[np.float64], k: int, labels: NDArray[np.int64], seed: int
    ) -> NDArray[np.int64]:
        nonlocal model
        if model is None or not warm_start:
            model = CECIB(
                k,
                labeled_weight="auto",
                random_state=seed,
                warm_start=warm_start,
                fresh_starts=fresh_starts,
            )
        return np.asarray(model.fit(X, labels).labels_, dtype=np.int64)

    return fit


def labeling(
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    k: int,
    seed: int,
    refit: int,
    fit: LabelClusterer,
    on_refit: Recorder,
) -> list[float]:
    """The expert labels random items one at a time; ``fit`` re-runs every ``refit`` labels.
    Returns the ARI after each of BUDGETS labels."""
    order = np.random.default_rng(seed).permutation(len(y))
    labels = np.full(len(y), -1, dtype=np.int64)
    previous: NDArray[np.int64] | None = None
    scores = []
    for given in range(refit, BUDGETS[-1] + 1, refit):
        labels[order[:given]] = y[order[:given]]
        current = fit(X, k, labels, seed)
        if previous is not None:
            on_refit(previous, current)
        previous = current
        if given in BUDGETS:
            scores.append(adjusted_rand_score(y, current))
    return scores


def moved_share(old: NDArray[np.int64], new: NDArray[np.int64]) -> float:
    """The share of items whose cluster differs once ``new`` is numbered like ``old``."""
    order = numbering_like(new, old)
    return float(np.mean(order[new] != old))


def timed(
    fit: Callable[P, NDArray[np.int64]], seconds: list[float]
) -> Callable[P, NDArray[np.int64]]:
    def run(*args: P.args, **kwargs: P.kwargs) -> NDArray[np.int64]:
        started = time.perf_counter()
        labels = fit(*args, **kwargs)
        seconds.append(time.perf_counter() - started)
        return labels

    return run


MODES = ("fresh", "continued", "loop")  # loop: continued with fresh_starts='if_worse'


def measure(
    name: str, method: str, mode: str, draws: int, refit: int
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

        continued = mode != "fresh"
        fresh_starts = "if_worse" if mode == "loop" else "always"
        if method == "ppc":
            pairs_fit: Clusterer = Continuing(fresh_starts) if continued else cluster
            scores.append(ours(X, y, k, seed, refit, timed(pairs_fit, seconds), record))
        else:
            fit = timed(cec_ib(continued, fresh_starts), seconds)
            scores.append(labeling(X, y, k, seed, refit, fit, record))
    return moved, seconds, np.mean(scores, axis=0).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--refit", type=int, default=5, help="answers per re-run")
    parser.add_argument("--method", nargs="+", default=["ppc", "cec-ib"], choices=["ppc", "cec-ib"])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = parser.parse_args()
    print(
        "| method | data | re-runs | items moved per re-run | re-runs moving > 5 % | s per fit | "
        + " | ".join(f"ARI@{b}" for b in BUDGETS)
        + " |"
    )
    print("|" + "---|" * (len(BUDGETS) + 6))
    for method in args.method:
        for name in args.data:
            for mode in args.modes:
                moved, seconds, ari = measure(name, method, mode, args.draws, args.refit)
                share = np.asarray(moved)
                cells = " | ".join(f"{v:.3f}" for v in ari)
                print(
                    f"| {method} | {name} | {mode} | {100 * share.mean():.1f} % | "
                    f"{100 * np.mean(share > MOVED):.0f} % | {np.mean(seconds):.2f} | {cells} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
