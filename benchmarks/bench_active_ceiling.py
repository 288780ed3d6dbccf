"""What answers can do for a Gaussian mixture on a data set of bench_active (default digits).

Prints, on one draw of bench_active's protocol (standardised, PCA to 10 dimensions, 90 % of the
items): GaussianMixture (full) from k-means starts, ARI and mean log-likelihood per start; the
same started at the true classes' Gaussians (the best any answers could steer it to) and where
EM takes it; and PPC given r labeled items per class, for a few r, as an upper bound on what
about r * classes well-placed answers could hold (docs/active.md, "Why digits does not move").

    .venv/bin/python -m benchmarks.bench_active_ceiling [--data digits] [--draw 0]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

from app.engine import PPC
from benchmarks.bench_active import LOADERS, dataset, subsample

PER_CLASS = (3, 6, 18)
STARTS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="digits", choices=list(LOADERS))
    parser.add_argument("--draw", type=int, default=0)
    args = parser.parse_args()
    X, y = subsample(*dataset(args.data), 0.9, args.draw)
    k = len(np.unique(y))
    print("| start | ARI | mean log-likelihood |")
    print("|---|---|---|")
    for seed in range(STARTS):
        model = GaussianMixture(k, covariance_type="full", random_state=seed).fit(X)
        print(
            f"| k-means, seed {seed} | {adjusted_rand_score(y, model.predict(X)):.3f} | "
            f"{model.score(X):.3f} |"
        )
    means = np.array([X[y == c].mean(axis=0) for c in range(k)])
    covariances = np.array([np.cov(X[y == c].T) + 1e-6 * np.eye(X.shape[1]) for c in range(k)])
    weights = np.bincount(y) / len(y)
    truth = GaussianMixture(
        k,
        covariance_type="full",
        weights_init=weights,
        means_init=means,
        precisions_init=np.linalg.inv(covariances),
        max_iter=500,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth.fit(X)
    # The true classes' Gaussians as a mixture, before EM moves them: its plain posterior.
    at_truth = GaussianMixture(k, covariance_type="full", max_iter=1)
    at_truth.weights_, at_truth.means_, at_truth.covariances_ = weights, means, covariances
    at_truth.precisions_cholesky_ = np.linalg.cholesky(np.linalg.inv(covariances))
    print(
        f"| the true classes' Gaussians (no EM) | {adjusted_rand_score(y, at_truth.predict(X)):.3f}"
        f" | {at_truth.score(X):.3f} |"
    )
    print(
        f"| EM from the true classes' Gaussians | {adjusted_rand_score(y, truth.predict(X)):.3f} | "
        f"{truth.score(X):.3f} |"
    )
    print()
    print("| labeled items per class | PPC full | PPC auto |")
    print("|---|---|---|")
    rng = np.random.default_rng(args.draw)
    for per in PER_CLASS:
        scores: dict[str, list[float]] = {"full": [], "auto": []}
        for seed in range(4):
            labels = np.full(len(y), -1)
            for c in range(k):
                labels[rng.choice(np.flatnonzero(y == c), per, replace=False)] = c
            for covariance, out in scores.items():
                model = PPC(k, covariance=covariance, random_state=seed).fit(X, labels=labels)
                out.append(adjusted_rand_score(y, model.labels_))
        print(f"| {per} | {np.mean(scores['full']):.3f} | {np.mean(scores['auto']):.3f} |")


if __name__ == "__main__":
    main()
