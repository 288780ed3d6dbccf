"""The paper's semi-supervised protocol (Sec. 5.2, Fig. 3, Table 2) on iris and wine.

For each data set and labeled fraction (10%, 20%; 0% as the unsupervised reference), 10 random
labelings: a uniform sample without replacement of the points gets its true class (spec decision
7.16). CEC-IB starts with k = 2 x the number of classes, beta in {1, beta_0 = 0.26978}, eps =
0.05, default n_init = 10, random_state = the labeling's seed; each once as the authors' code
fits (k-means++ starts, Hartigan) and once with the engine's default polishing. NMI (2 I /
(H + H), natural log) is computed on all points (decision 7.14) and, for reference, on the
unlabeled points only. The baseline is
scikit-learn's GaussianMixture with the true k (full covariance, no labels), seeds 0..9.

    .venv/bin/python -m benchmarks.protocol_cec_ib            # the table in docs/cec-ib.md
    .venv/bin/python -m benchmarks.protocol_cec_ib --runs 3   # quicker
    .venv/bin/python -m benchmarks.protocol_cec_ib --part energy

``--part energy`` is the energy parity check: iris and wine; 10%, 20% and 30% labeled; beta 1
and beta_0; labelings 0 and 1 (24 configurations); k = 6, eps = 0.05, n_init = 10. The engine's
defaults against the best of as many plain k-means++ starts without polishing (the authors'
Java demo: ``initTimes=10`` starts of plain k-means++ and Hartigan, the lowest energy kept),
seeded differently. It prints each energy and how many configurations end at or below.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.mixture import GaussianMixture
from sklearn.utils import check_random_state

from app.engine import BETA0, CECIB, normalized_mutual_info
from app.engine.core.cec_fit import fit_cec
from app.engine.core.families import FULL

DATASETS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "iris": lambda: load_iris(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
}
FRACTIONS = (0.0, 0.1, 0.2)
BETAS = {"CEC-IB_1": 1.0, "CEC-IB_0": BETA0}


@dataclass(frozen=True)
class Row:
    data: str
    fraction: float
    method: str
    nmi: list[float]
    nmi_unlabeled: list[float]
    clusters: list[int]


def partial_labels(truth: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """``fraction`` of the points, drawn uniformly without replacement, keep their class."""
    rng = np.random.default_rng(seed)
    y = np.full(truth.shape[0], -1)
    chosen = rng.choice(truth.shape[0], size=round(fraction * truth.shape[0]), replace=False)
    y[chosen] = truth[chosen]
    return y


def run_cec_ib(
    X: np.ndarray,
    truth: np.ndarray,
    fraction: float,
    beta: float,
    runs: int,
    polish: bool = False,
) -> tuple[list[float], list[float], list[int]]:
    k = 2 * np.unique(truth).size
    nmi, nmi_unlabeled, clusters = [], [], []
    for seed in range(runs):
        y = partial_labels(truth, fraction, seed)
        model = CECIB(
            k, beta=beta, min_cluster_fraction=ENERGY_EPS, polish=polish, random_state=seed
        ).fit(X, y)
        unlabeled = y == -1
        nmi.append(normalized_mutual_info(truth, model.labels_))
        nmi_unlabeled.append(normalized_mutual_info(truth[unlabeled], model.labels_[unlabeled]))
        clusters.append(model.n_clusters_)
    return nmi, nmi_unlabeled, clusters


def run_gmm(X: np.ndarray, truth: np.ndarray, runs: int) -> list[float]:
    k = np.unique(truth).size
    return [
        normalized_mutual_info(
            truth, GaussianMixture(k, covariance_type="full", random_state=seed).fit_predict(X)
        )
        for seed in range(runs)
    ]


def protocol(runs: int) -> list[Row]:
    rows = []
    for name, load in DATASETS.items():
        X, truth = load()
        gmm = run_gmm(X, truth, runs)
        classes = int(np.unique(truth).size)
        rows.append(Row(name, 0.0, "GaussianMixture (true k)", gmm, gmm, [classes] * runs))
        for fraction in FRACTIONS:
            for method, beta in BETAS.items():
                if fraction == 0.0 and beta != 1.0:
                    continue  # without labels beta has no effect: this is plain CEC
                label = "CEC (no labels)" if fraction == 0.0 else method
                for polish in (False, True):
                    nmi, nmi_u, clusters = run_cec_ib(X, truth, fraction, beta, runs, polish)
                    shown = f"{label}, polished (engine default)" if polish else label
                    rows.append(Row(name, fraction, shown, nmi, nmi_u, clusters))
    return rows


def print_table(rows: list[Row]) -> None:
    print(
        "| data set | labeled | method | mean NMI (all points) | sd | mean NMI (unlabeled) "
        "| final clusters: mean [min-max] |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.data} | {r.fraction:.0%} | {r.method} | {np.mean(r.nmi):.3f} "
            f"| {np.std(r.nmi):.3f} | {np.mean(r.nmi_unlabeled):.3f} "
            f"| {np.mean(r.clusters):.1f} [{min(r.clusters)}-{max(r.clusters)}] |"
        )


ENERGY_FRACTIONS = (0.1, 0.2, 0.3)
ENERGY_LABELINGS = (0, 1)
ENERGY_K, ENERGY_EPS, ENERGY_STARTS = 6, 0.05, 10


def plain_kmeanspp_energy(X: np.ndarray, y: np.ndarray, beta: float, seed: int) -> float:
    """The authors' procedure: ENERGY_STARTS plain k-means++ starts, Hartigan, lowest energy."""
    return fit_cec(
        np.ascontiguousarray(X, dtype=np.float64),
        y.astype(np.int64),
        int(y.max()) + 1,
        n_clusters=ENERGY_K,
        family=FULL,
        beta=beta,
        min_cluster_fraction=ENERGY_EPS,
        n_init=ENERGY_STARTS,
        max_iter=100,
        init="k-means++",
        rng=check_random_state(seed),
        local_trials=1,
        polish=False,
    ).energy


@dataclass(frozen=True)
class EnergyRow:
    data: str
    fraction: float
    beta: float
    labeling: int
    ours: float
    clusters: int
    theirs: float

    @property
    def at_or_below(self) -> bool:
        return self.ours <= self.theirs + 1e-9


def energy_rows() -> list[EnergyRow]:
    """The 24 configurations of --part energy: the engine's defaults and the authors'
    procedure (``plain_kmeanspp_energy``) on each."""
    rows = []
    for name, load in DATASETS.items():
        X, truth = load()
        for fraction in ENERGY_FRACTIONS:
            for beta in BETAS.values():
                for labeling in ENERGY_LABELINGS:
                    y = partial_labels(truth, fraction, labeling)
                    ours = CECIB(
                        ENERGY_K,
                        beta=beta,
                        min_cluster_fraction=ENERGY_EPS,
                        n_init=ENERGY_STARTS,
                        random_state=labeling,
                    ).fit(X, y)
                    theirs = plain_kmeanspp_energy(X, y, beta, 1000 + labeling)
                    rows.append(
                        EnergyRow(
                            name, fraction, beta, labeling, ours.energy_, ours.n_clusters_, theirs
                        )
                    )
    return rows


def energy_parity() -> None:
    """Print the --part energy table (module docstring)."""
    print(
        "| data set | labeled | beta | labeling | engine defaults | plain k-means++ | at or below |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = energy_rows()
    for r in rows:
        print(
            f"| {r.data} | {r.fraction:.0%} | {r.beta:.5g} | {r.labeling} "
            f"| {r.ours:.4f} ({r.clusters} clusters) | {r.theirs:.4f} "
            f"| {'yes' if r.at_or_below else 'no'} |"
        )
    wins = sum(r.at_or_below for r in rows)
    print(f"\nengine defaults at or below plain k-means++: {wins} of {len(rows)} configurations")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="random labelings per setting")
    parser.add_argument("--part", choices=("nmi", "energy"), default="nmi")
    args = parser.parse_args()
    if args.part == "energy":
        energy_parity()
    else:
        print_table(protocol(args.runs))


if __name__ == "__main__":
    main()
