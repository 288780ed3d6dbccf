"""Pairwise constraints and labels against the constrained-clustering library (issue 18).

Protocol: iris, wine, breast cancer and digits, standardised, PCA to 10 dimensions where wider.
Pairs rows: 50 and 200 random item pairs drawn uniformly, a must-link when both items share their
true class, a cannot-link otherwise. Labels rows: 10% of the items of every class labeled. Every
row is repeated over ``--draws`` draws (seeds 0, 1, ...) and every method gets the same draw.

Peers (``active-semi-supervised-clustering``, a dev dependency): PCKMeans, MPCKMeans and
COPKMeans on pairs, SeededKMeans and ConstrainedKMeans on labels, all with k = classes. Ours:
PPC with hard relations (w = +-inf, k = classes, defaults), C4S (k = classes, covariance
'auto' as the API runs it on a table, engine defaults otherwise; "C4S full", "C4S spherical"
and "C4S tied" fix the family, for reference, and are not flagged) and,
on the labels, CEC-IB as the API runs it when the user leaves every parameter empty (its own
``plan_cec_ib``: one cluster per label category, ``random_state=0``, engine defaults otherwise),
"PPC labels", PPC as the API runs it on labels with every parameter left empty (``plan_ppc``:
one component per label category, covariance 'auto'), and for reference "CEC-IB 2k",
k = 2 x classes as in the issue (``--cecib-factor``), defaults.

Printed: mean ARI over the draws that fitted, mean seconds per fit, and "failed f/D" when a
method raised on f of D draws (COPKMeans fails on an infeasible assignment order; ours must
not). A row is flagged when one of ours is below the best peer's mean ARI or failed.

The peer library calls ``np.seterr('raise')`` when MPCKMeans is imported; the import and every
peer fit run inside ``_contained_errstate`` so that the rest of the run (and our estimators)
see the error state they started with. The peers draw from NumPy's global generator; it is
seeded per fit so that their runs repeat.

    .venv/bin/python -m benchmarks.bench_constraints   # the table in docs/constraints.md
    .venv/bin/python -m benchmarks.bench_constraints --data iris,wine --methods PPC,MPCKMeans
    .venv/bin/python -m benchmarks.bench_constraints --draws 1 --pairs 50
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import C4S, CECIB, PPC
from app.jobs.algorithms.cec import CECIBParams, plan_cec_ib
from app.jobs.algorithms.ppc import PPCParams, plan_ppc
from app.jobs.results.fitted import read_fitted
from app.sideinfo import SideInformation

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DATASETS: dict[str, Callable[..., Any]] = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
}
PAIR_PEERS = ("PCKMeans", "MPCKMeans", "COPKMeans")
PAIR_OURS = ("PPC", "C4S")
# C4S with one fixed family, for reference (not flagged; docs/c4s-c3l.md, the auto table)
C4S_FAMILY_COLUMNS = {
    "C4S full": "full",
    "C4S spherical": "spherical",
    "C4S tied": "tied_spherical",
}
LABEL_PEERS = ("SeededKMeans", "ConstrainedKMeans")
LABEL_OURS = ("CEC-IB", "PPC labels", "CEC-IB 2k")
METHODS = PAIR_PEERS + PAIR_OURS + tuple(C4S_FAMILY_COLUMNS) + LABEL_PEERS + LABEL_OURS
MAX_DIMS = 10
LABEL_FRACTION = 0.10


@contextlib.contextmanager
def _contained_errstate() -> Iterator[None]:
    """Restore NumPy's global floating-point error state on exit, whatever ran inside."""
    saved = np.geterr()
    try:
        yield
    finally:
        np.seterr(**saved)


def _peer_classes() -> dict[str, Any]:
    with _contained_errstate():  # mpckmeans.py calls np.seterr('raise') at import
        from active_semi_clustering.semi_supervised.labeled_data.constrainedkmeans import (
            ConstrainedKMeans,
        )
        from active_semi_clustering.semi_supervised.labeled_data.seededkmeans import (
            SeededKMeans,
        )
        from active_semi_clustering.semi_supervised.pairwise_constraints import (
            COPKMeans,
            MPCKMeans,
            PCKMeans,
        )
    return {
        "PCKMeans": PCKMeans,
        "MPCKMeans": MPCKMeans,
        "COPKMeans": COPKMeans,
        "SeededKMeans": SeededKMeans,
        "ConstrainedKMeans": ConstrainedKMeans,
    }


def load(name: str) -> tuple[FloatArray, IntArray]:
    """Standardised features (PCA to 10 dimensions where wider) and the true classes."""
    X, y = DATASETS[name](return_X_y=True)
    Z = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    if Z.shape[1] > MAX_DIMS:
        Z = PCA(MAX_DIMS, random_state=0).fit_transform(Z)
    return np.ascontiguousarray(Z), np.asarray(y, dtype=np.int64)


def draw_pairs(y: IntArray, n_pairs: int, seed: int) -> tuple[IntArray, IntArray]:
    """``n_pairs`` distinct random pairs; returns (must-links, cannot-links) from the truth."""
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int]] = set()
    while len(seen) < n_pairs:
        i, j = rng.choice(y.shape[0], 2, replace=False)
        seen.add((int(min(i, j)), int(max(i, j))))
    pairs = np.array(sorted(seen), dtype=np.int64)
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    return pairs[same], pairs[~same]


def draw_labels(y: IntArray, seed: int) -> IntArray:
    """10% of every class labeled with its class (at least one item each), -1 elsewhere."""
    rng = np.random.default_rng(seed)
    labels = np.full(y.shape[0], -1, dtype=np.int64)
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        count = max(1, round(LABEL_FRACTION * members.shape[0]))
        chosen = rng.choice(members, count, replace=False)
        labels[chosen] = c
    return labels


@dataclass
class Task:
    """One draw of side information on one data set."""

    X: FloatArray
    y: IntArray
    k: int
    seed: int
    must: IntArray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    cannot: IntArray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    labels: IntArray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


def _fit_ppc(task: Task) -> IntArray:
    pairs = np.concatenate([task.must, task.cannot])
    weights = np.concatenate([np.full(len(task.must), np.inf), np.full(len(task.cannot), -np.inf)])
    model = PPC(task.k, random_state=task.seed).fit(task.X, pairs=pairs, weights=weights)
    return np.asarray(model.labels_)


def _fit_c4s(task: Task, covariance: str = "auto") -> IntArray:
    # covariance 'auto', as the API runs C4S on a table: full or tied spherical, by the pairs
    model = C4S(task.k, covariance=covariance, random_state=task.seed)
    model.fit(task.X, must_link=task.must, cannot_link=task.cannot)
    return np.asarray(model.labels_)


def _fit_labels(model: Any, task: Task) -> IntArray:
    # CEC-IB takes the labels as ``labels=`` once side information is keyword-only (issue 20)
    fit: Callable[..., Any] = model.fit
    if "labels" in inspect.signature(fit).parameters:
        fit(task.X, labels=task.labels)
    else:
        fit(task.X, task.labels)
    return np.asarray(model.labels_)


def _fit_cecib_api(task: Task) -> IntArray:
    """The estimator the API builds for a CEC-IB run with every parameter left empty."""
    names = [str(c) for c in range(int(task.labels.max()) + 1)]
    info = SideInformation(task.X.shape[0], 0, task.labels.astype(np.int32), names)
    plan = plan_cec_ib(CECIBParams(), info, task.X, lambda _i, _e: True)
    return _fit_labels(plan.estimator, task)


def _fit_ppc_labels_api(task: Task) -> IntArray:
    """The estimator the API builds for a PPC run on labels with every parameter left empty
    (one component per label category, covariance 'auto')."""
    names = [str(c) for c in range(int(task.labels.max()) + 1)]
    info = SideInformation(task.X.shape[0], 0, task.labels.astype(np.int32), names)
    plan = plan_ppc(PPCParams(), info, task.X, lambda _i, _e: True)
    plan.estimator.fit(task.X, **plan.fit_kwargs)
    return np.asarray(read_fitted(plan.estimator).labels)


def _fit_cecib(task: Task, factor: int) -> IntArray:
    return _fit_labels(CECIB(factor * task.k, random_state=task.seed), task)


def _fit_peer(cls: Any, task: Task, *, on_labels: bool) -> IntArray:
    np.random.seed(task.seed)  # the peers draw their starts from the global generator
    model = cls(n_clusters=task.k)
    with _contained_errstate():
        if on_labels:
            model.fit(task.X, y=task.labels)
        else:
            must = [tuple(p) for p in task.must.tolist()]
            cannot = [tuple(p) for p in task.cannot.tolist()]
            model.fit(task.X, ml=must, cl=cannot)
    return np.asarray(model.labels_, dtype=np.int64)


@dataclass
class Score:
    ari: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def mean(self) -> float:
        return float(np.mean(self.ari)) if self.ari else float("nan")

    def cell(self, draws: int) -> str:
        if not self.ari:
            return f"failed {len(self.failures)}/{draws}"
        text = f"{self.mean():.2f} ({np.mean(self.seconds):.2f} s)"
        return text + (f", failed {len(self.failures)}/{draws}" if self.failures else "")


def run_method(fit: Callable[[Task], IntArray], tasks: list[Task]) -> Score:
    score = Score()
    for task in tasks:
        begin = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels = fit(task)
        except Exception as error:  # a method that refuses a draw is reported, not fatal
            score.failures.append(f"{type(error).__name__}: {error}")
            continue
        score.seconds.append(time.perf_counter() - begin)
        score.ari.append(float(adjusted_rand_score(task.y, labels)))
    return score


def fitters(cecib_factor: int) -> dict[str, Callable[[Task], IntArray]]:
    peers = _peer_classes()
    out: dict[str, Callable[[Task], IntArray]] = {
        "PPC": _fit_ppc,
        "C4S": _fit_c4s,
        "CEC-IB": _fit_cecib_api,
        "PPC labels": _fit_ppc_labels_api,
        "CEC-IB 2k": functools.partial(_fit_cecib, factor=cecib_factor),
    }
    for name in PAIR_PEERS + LABEL_PEERS:
        out[name] = functools.partial(_fit_peer, peers[name], on_labels=name in LABEL_PEERS)
    for name, covariance in C4S_FAMILY_COLUMNS.items():
        out[name] = functools.partial(_fit_c4s, covariance=covariance)
    return out


def print_row(
    label: str,
    columns: tuple[str, ...],
    peers: tuple[str, ...],
    ours: tuple[str, ...],
    scores: dict[str, Score],
    draws: int,
    verbose: bool,
) -> None:
    cells = [scores[m].cell(draws) if m in scores else "" for m in columns]
    best = max((scores[m].mean() for m in peers if m in scores and scores[m].ari), default=None)
    behind = [
        m
        for m in ours
        if m in scores
        and (scores[m].failures or (best is not None and not scores[m].mean() >= best - 5e-3))
    ]
    flag = "below best peer: " + ", ".join(behind) if behind else ""
    print(f"| {label} | " + " | ".join(cells) + f" | {flag} |", flush=True)
    if verbose:
        for m in columns:
            for failure in scores.get(m, Score()).failures:
                print(f"  {m}: {failure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=",".join(DATASETS), help="comma-separated data sets")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    parser.add_argument("--pairs", default="50,200", help="comma-separated pair counts")
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--no-labels", action="store_true", help="skip the 10%% labels rows")
    parser.add_argument(
        "--cecib-factor", type=int, default=2, help="CEC-IB 2k: k = factor x classes"
    )
    parser.add_argument("--verbose", action="store_true", help="print every failure's message")
    args = parser.parse_args()
    names = [d for d in args.data.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    for bad in [d for d in names if d not in DATASETS] + [m for m in methods if m not in METHODS]:
        parser.error(f"unknown data set or method {bad!r}; choose from {list(DATASETS)} {METHODS}")
    counts = [int(c) for c in args.pairs.split(",") if c]
    fit = fitters(args.cecib_factor)
    before = np.geterr()
    pair_cols = tuple(m for m in PAIR_PEERS + PAIR_OURS + tuple(C4S_FAMILY_COLUMNS) if m in methods)
    label_cols = tuple(m for m in LABEL_PEERS + LABEL_OURS if m in methods)
    print(f"mean ARI (mean seconds per fit) over {args.draws} draws\n")
    if pair_cols and counts:
        print("| data, pairs | " + " | ".join(pair_cols) + " | flag |")
        print("|---" * (len(pair_cols) + 2) + "|")
        for name in names:
            X, y = load(name)
            k = int(y.max()) + 1
            for count in counts:
                tasks = [
                    Task(X, y, k, s, *draw_pairs(y, count, 1000 * count + s))
                    for s in range(args.draws)
                ]
                scores = {m: run_method(fit[m], tasks) for m in pair_cols}
                print_row(
                    f"{name}, {count}", pair_cols, PAIR_PEERS, PAIR_OURS, scores, args.draws,
                    args.verbose,
                )  # fmt: skip
        print()
    if label_cols and not args.no_labels:
        print("| data, 10% labeled | " + " | ".join(label_cols) + " | flag |")
        print("|---" * (len(label_cols) + 2) + "|")
        for name in names:
            X, y = load(name)
            k = int(y.max()) + 1
            tasks = [Task(X, y, k, s, labels=draw_labels(y, s)) for s in range(args.draws)]
            scores = {m: run_method(fit[m], tasks) for m in label_cols}
            # the 2k column is for reference; the flag judges what the API runs
            print_row(
                name, label_cols, LABEL_PEERS, LABEL_OURS[:2], scores, args.draws, args.verbose
            )
        print()
    if np.geterr() != before:
        print(f"warning: NumPy's error state changed during the run: {before} -> {np.geterr()}")


if __name__ == "__main__":
    main()
