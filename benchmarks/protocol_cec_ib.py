"""The paper's semi-supervised protocol (Sec. 5.2, Fig. 3, Table 2) on iris and wine.

For each data set and labeled fraction (10%, 20%; 0% as the unsupervised reference), 10 random
labelings: a uniform sample without replacement of the points gets its true class (spec decision
7.16). CEC-IB starts with k = 2 x the number of classes, beta in {1, beta_0 = 0.26978}, default
n_init = 10, random_state = the labeling's seed. NMI (2 I / (H + H), natural log) is computed on
all points (decision 7.14) and, for reference, on the unlabeled points only. The baseline is
scikit-learn's GaussianMixture with the true k (full covariance, no labels), seeds 0..9.

    .venv/bin/python -m benchmarks.protocol_cec_ib            # the table in docs/cec-ib.md
    .venv/bin/python -m benchmarks.protocol_cec_ib --runs 3   # quicker
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.mixture import GaussianMixture

from app.engine import BETA0, CECIB, normalized_mutual_info

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
    X: np.ndarray, truth: np.ndarray, fraction: float, beta: float, runs: int
) -> tuple[list[float], list[float], list[int]]:
    k = 2 * np.unique(truth).size
    nmi, nmi_unlabeled, clusters = [], [], []
    for seed in range(runs):
        y = partial_labels(truth, fraction, seed)
        model = CECIB(k, beta=beta, random_state=seed).fit(X, y)
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
                nmi, nmi_u, clusters = run_cec_ib(X, truth, fraction, beta, runs)
                rows.append(Row(name, fraction, label, nmi, nmi_u, clusters))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="random labelings per setting")
    print_table(protocol(parser.parse_args().runs))


if __name__ == "__main__":
    main()
