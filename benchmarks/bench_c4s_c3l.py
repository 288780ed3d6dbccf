"""Speed of C4S and C3L beside CEC on the same data (printed table, nothing asserted).

Synthetic data as in bench_cec.py (same generator): k = 20 Gaussian components with random full
covariances in d = 10. C4S gets teacher constraints on 1% of the points (a must-link chain per
component among the sampled points and a cannot-link between every two component chunklets);
C3L gets the signed distance to a random hyperplane through the median as side scores (leakage
0.05). All three run with 20 initial clusters, n_init = 1, eps = 1%, the same seed; a first,
untimed fit on 2,000 points compiles (or loads) the numba kernels.

    .venv/bin/python -m benchmarks.bench_c4s_c3l            # the table in docs/c4s-c3l.md
    .venv/bin/python -m benchmarks.bench_c4s_c3l --quick    # smoke run (n = 5,000)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from app.engine import C3L, C4S, CEC
from benchmarks.protocol_c4s_c3l import teacher
from benchmarks.toy_data import gaussian_mixture

K = 20
D = 10
EPS = 0.01
SEED = 0


def make_data(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """k = 20 Gaussian components with random covariances in d = 10, and the component ids."""
    return gaussian_mixture(n, D, K, seed)


def side_scores(X: np.ndarray, seed: int = SEED) -> np.ndarray:
    direction = np.random.default_rng(seed).normal(size=X.shape[1])
    projection = X @ direction / np.linalg.norm(direction)
    return projection - np.median(projection)


def _timed(fit: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - start


def run(n: int) -> None:
    X, component = make_data(n)
    ml, cl = teacher(component, 0.01, True, SEED)
    scores = side_scores(X)
    small = slice(0, 2000)
    sml, scl = teacher(component[small], 0.05, True, SEED)
    C4S(K, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(
        X[small], must_link=sml, cannot_link=scl
    )
    C3L(K, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(
        X[small], side_scores=scores[small]
    )
    CEC(K, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(X[small])
    print(f"n = {n:,}, d = {X.shape[1]}, k = {K}; C4S: {ml.shape[0]} must-links and "
          f"{cl.shape[0]} cannot-links on {round(0.01 * n)} points")  # fmt: skip
    print()
    print("| method | wall time | sweeps | clusters (C4S: groups / Gaussians) | energy (nats) | "
          "time / CEC time |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    cec, t_cec = _timed(
        lambda: CEC(K, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(X)
    )
    assert isinstance(cec, CEC)
    print(f"| CEC | {t_cec:.2f} s | {cec.n_iter_} | {cec.n_clusters_} | {cec.energy_:.6f} | 1.0 |")
    c4s, t_c4s = _timed(
        lambda: C4S(K, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(
            X, must_link=ml, cannot_link=cl
        )
    )
    assert isinstance(c4s, C4S)
    labels = c4s.labels_
    assert np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
    assert np.all(labels[cl[:, 0]] != labels[cl[:, 1]])
    gaussians = int(c4s.cluster_labels_.max()) + 1
    print(f"| C4S (1% constrained) | {t_c4s:.2f} s | {c4s.n_iter_} | {c4s.n_clusters_} / "
          f"{gaussians} | {c4s.energy_:.6f} | {t_c4s / t_cec:.1f} |")  # fmt: skip
    c3l, t_c3l = _timed(
        lambda: C3L(K, leakage=0.05, n_init=1, min_cluster_fraction=EPS, random_state=SEED).fit(
            X, side_scores=scores
        )
    )
    assert isinstance(c3l, C3L)
    print(f"| C3L (leakage 0.05) | {t_c3l:.2f} s | {c3l.n_iter_} | {c3l.n_clusters_} | "
          f"{c3l.energy_:.6f} | {t_c3l / t_cec:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 5,000 instead of 100,000")
    args = parser.parse_args()
    run(5_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
