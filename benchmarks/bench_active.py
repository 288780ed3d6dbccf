"""Active questions against the constrained-clustering library's NPU and MinMax, and random pairs.

A simulated expert answers "same or different?" from the true classes. Every strategy's answers
go to the same clusterer (PPC with hard relations, k = number of classes, defaults), so the
curves compare the questions, not the clusterers. Ours asks ``--batch`` questions at a time from
the latest fit (``app.engine.active.suggest_pairs``, the rule behind
``GET /datasets/{id}/suggestions``), then refits (``ours-live``: the refits continue the last
fit, as the workspace's Live re-runs do, ``PPC(warm_start=True)``); the library's strategies
run once per budget with their own internal clusterer (PCKMeans), as the library is used.
Each strategy's answers count one query each; the library's strategies add the constraints
their neighbourhoods imply, and PPC infers the same from hard relations (must-links contract,
cannot-links exclude).

Data: iris, wine, breast cancer, digits; standardised, PCA to 10 dimensions where wider (the
protocol of bench_constraints). Prints mean ARI over ``--draws`` per budget, then ours minus each
peer on the same draws (mean ± standard error: a draw's ARI swings by up to 0.1 on digits, for
every strategy alike, and the pairing removes that shared swing). A row that takes
more than ``--limit`` seconds is stopped and says so (the library's NPU refits PCKMeans after
every answer and MinMax compares pairs in Python: on digits they may not finish).

    .venv/bin/python -m benchmarks.bench_active [--data iris wine] [--draws 3] [--limit 1800]
        [--first-draw 3] [--per-draw]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import PPC
from app.engine.active import knowledge, suggest_pairs
from benchmarks._limits import interrupted_after

with np.errstate():  # the library sets np.seterr("raise") on import; keep ours as it was
    from active_semi_clustering.active.pairwise_constraints import NPU, MinMax
    from active_semi_clustering.active.pairwise_constraints.example_oracle import ExampleOracle
    from active_semi_clustering.semi_supervised.pairwise_constraints import PCKMeans

BUDGETS = (10, 25, 50, 100)
LOADERS = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
}
Pairs = tuple[NDArray[np.int64], NDArray[np.int64]]  # (must-links, cannot-links)


def dataset(name: str) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    X, y = LOADERS[name](return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if X.shape[1] > 10:
        X = PCA(10, random_state=0).fit_transform(X)
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def cluster(X: NDArray[np.float64], k: int, links: Pairs, seed: int) -> NDArray[np.int64]:
    must, cannot = links
    pairs = np.concatenate([must.reshape(-1, 2), cannot.reshape(-1, 2)])
    weights = np.concatenate([np.full(len(must), np.inf), np.full(len(cannot), -np.inf)])
    model = PPC(k, random_state=seed)
    if len(pairs):
        model.fit(X, pairs=pairs, weights=weights)
    else:
        model.fit(X)
    return np.asarray(model.labels_, dtype=np.int64)


def answer(y: NDArray[np.int64], asked: list[tuple[int, int]]) -> Pairs:
    same = [p for p in asked if y[p[0]] == y[p[1]]]
    different = [p for p in asked if y[p[0]] != y[p[1]]]
    return (
        np.array(same, dtype=np.int64).reshape(-1, 2),
        np.array(different, dtype=np.int64).reshape(-1, 2),
    )


class Continuing:
    """PPC re-runs that continue the previous fit (``warm_start``), as Live re-runs do in the
    workspace; a new instance per draw."""

    def __init__(self, fresh_starts: str = "always") -> None:
        self.model: PPC | None = None
        self.fresh_starts = fresh_starts  # 'if_worse': as the service's Live re-runs

    def __call__(
        self, X: NDArray[np.float64], k: int, links: Pairs, seed: int
    ) -> NDArray[np.int64]:
        if self.model is None:
            self.model = PPC(k, random_state=seed, warm_start=True, fresh_starts=self.fresh_starts)
        must, cannot = links
        pairs = np.concatenate([must.reshape(-1, 2), cannot.reshape(-1, 2)])
        weights = np.concatenate([np.full(len(must), np.inf), np.full(len(cannot), -np.inf)])
        if len(pairs):
            self.model.fit(X, pairs=pairs, weights=weights)
        else:
            self.model.fit(X)
        return np.asarray(self.model.labels_, dtype=np.int64)


Clusterer = Callable[[NDArray[np.float64], int, Pairs, int], NDArray[np.int64]]
Recorder = Callable[[NDArray[np.int64], NDArray[np.int64]], None]  # (labels before, after)


def ours(
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    k: int,
    seed: int,
    refit: int,
    fit: Clusterer = cluster,
    on_refit: Recorder | None = None,
) -> list[float]:
    """As the workspace's "Ask me" panel: one question at a time, each from the latest run and
    every answer so far; the method re-runs every ``refit`` answers (Live re-runs after each)
    with ``fit`` (fresh fits, or ``Continuing()`` as Live does); ``on_refit(old, new)`` sees
    the labels before and after every re-run."""
    asked: list[tuple[int, int]] = []
    scores = []
    labels = fit(X, k, answer(y, asked), seed)

    def rerun() -> None:
        nonlocal labels
        new = fit(X, k, answer(y, asked), seed)
        if on_refit is not None:
            on_refit(labels, new)
        labels = new

    for budget in BUDGETS:
        while len(asked) < budget:
            must, cannot = answer(y, asked)
            facts = knowledge(len(y), must_link=must, cannot_link=cannot)
            questions = suggest_pairs(X, labels, 1, facts)
            if not questions:
                break
            asked.append((questions[0].items[0], questions[0].items[1]))
            if len(asked) % refit == 0:
                rerun()
        if len(asked) % refit:
            rerun()
        scores.append(adjusted_rand_score(y, labels))
    return scores


def random_pairs(X: NDArray[np.float64], y: NDArray[np.int64], k: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    scores = []
    for budget in BUDGETS:
        asked: list[tuple[int, int]] = []
        while len(asked) < budget:
            i, j = rng.choice(len(y), 2, replace=False)
            asked.append((int(i), int(j)))
        scores.append(adjusted_rand_score(y, cluster(X, k, answer(y, asked), seed)))
    return scores


def _distinct(pairs: object) -> NDArray[np.int64]:
    """The library's pairs without an item paired with itself (NPU emits some on subsamples
    of breast cancer; such a pair says nothing, and PPC refuses it)."""
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return array[array[:, 0] != array[:, 1]]


def library(strategy: Callable[[int], object]) -> Callable[..., list[float]]:
    def run(X: NDArray[np.float64], y: NDArray[np.int64], k: int, seed: int) -> list[float]:
        scores = []
        for budget in BUDGETS:
            np.random.seed(seed)  # the library draws from NumPy's global generator
            with np.errstate(all="ignore"):
                chooser = strategy(k)
                chooser.fit(X, oracle=ExampleOracle(y, max_queries_cnt=budget))  # type: ignore[attr-defined]
            ml, cl = chooser.pairwise_constraints_  # type: ignore[attr-defined]
            links = (_distinct(ml), _distinct(cl))
            scores.append(adjusted_rand_score(y, cluster(X, k, links, seed)))
        return scores

    return run


def subsample(
    X: NDArray[np.float64], y: NDArray[np.int64], fraction: float, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The draw's data: a random ``fraction`` of the items (all of them at 1), the same for
    every strategy. Without it a draw changes only the clusterer's seed, and our questions, a
    deterministic rule, would be asked about the same items in every draw."""
    if fraction >= 1.0:
        return X, y
    rng = np.random.default_rng(10_000 + seed)
    keep = np.sort(rng.choice(len(y), round(fraction * len(y)), replace=False))
    return X[keep], y[keep]


def _curves(
    strategy: Callable[..., list[float]],
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    k: int,
    draws: range,
    fraction: float,
) -> list[list[float]]:
    return [strategy(*subsample(X, y, fraction, seed), k, seed) for seed in draws]


def paired_difference(
    ours: list[list[float]], peer: list[list[float]]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per budget, the mean over draws of ours minus the peer on the same draw, and its standard
    error. The draws share the data and the clusterer's seed, so the pairing removes most of
    the swing of PPC's local optimum from draw to draw, which the two means alone carry twice."""
    difference = np.asarray(ours, dtype=np.float64) - np.asarray(peer, dtype=np.float64)
    n = difference.shape[0]
    spread = difference.std(axis=0, ddof=1) if n > 1 else np.full(difference.shape[1], np.nan)
    return difference.mean(axis=0), spread / np.sqrt(n)


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"--subsample must be in (0, 1], got {text}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument(
        "--first-draw",
        type=int,
        default=0,
        help="seed of the first draw: --first-draw 3 --draws 3 runs draws 3-5, to extend a "
        "measurement of a slow peer (NPU) without repeating its draws",
    )
    parser.add_argument("--refit", type=int, default=5, help="our answers per re-run")
    parser.add_argument("--strategies", nargs="+", default=["ours", "random", "NPU", "MinMax"])
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds a row may take")
    parser.add_argument(
        "--per-draw",
        action="store_true",
        help="also print every draw's curve, to pair a slow peer's draws with ours across runs",
    )
    parser.add_argument(
        "--subsample",
        type=_fraction,
        default=0.9,
        help="share of the items each draw keeps, drawn per draw (1: every item, every draw)",
    )
    args = parser.parse_args()
    strategies: dict[str, Callable[..., list[float]]] = {
        "ours": lambda X, y, k, s: ours(X, y, k, s, args.refit),
        "ours-live": lambda X, y, k, s: ours(X, y, k, s, args.refit, Continuing()),
        "random": random_pairs,
        "NPU": library(lambda k: NPU(clusterer=PCKMeans(n_clusters=k))),
        "MinMax": library(lambda k: MinMax(n_clusters=k)),
    }
    header = "| data | strategy | " + " | ".join(f"ARI@{b}" for b in BUDGETS) + " | time s |"
    print(header)
    print("|" + "---|" * (len(BUDGETS) + 3))
    seeds = range(args.first_draw, args.first_draw + args.draws)
    for name in args.data:
        X, y = dataset(name)
        k = len(np.unique(y))
        curves: dict[str, list[list[float]]] = {}
        for strategy in args.strategies:
            draws = partial(_curves, strategies[strategy], X, y, k, seeds, args.subsample)
            run = interrupted_after(draws, args.limit)
            if run.value is None:
                stopped = f"stopped after {args.limit:.0f} s | " * len(BUDGETS)
                print(f"| {name} | {strategy} | {stopped}> {args.limit:.0f} |", flush=True)
                continue
            curves[strategy] = run.value
            cells = " | ".join(f"{v:.3f}" for v in np.array(run.value).mean(axis=0))
            print(f"| {name} | {strategy} | {cells} | {run.seconds / args.draws:.1f} |", flush=True)
            if args.per_draw:
                for seed, curve in zip(seeds, run.value, strict=True):
                    cells = " | ".join(f"{v:.3f}" for v in curve)
                    print(f"| {name} | {strategy}, draw {seed} | {cells} | |", flush=True)
        peers = [p for p in curves if p not in ("ours", "ours-live")] if "ours" in curves else []
        for peer in peers:
            mean, error = paired_difference(curves["ours"], curves[peer])
            cells = " | ".join(f"{m:+.3f} ± {e:.3f}" for m, e in zip(mean, error, strict=True))
            print(f"| {name} | ours - {peer}, same draws | {cells} | |", flush=True)


if __name__ == "__main__":
    main()
