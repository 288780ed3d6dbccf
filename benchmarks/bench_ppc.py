"""Speed of the PPC engine (printed tables, nothing asserted).

1. Without relations: PPC against scikit-learn's GaussianMixture at n = 100k, d = 10, k = 10,
   full covariances, from the same start (means, weights, covariances), a fixed number of EM
   iterations (tol = 0), best of 3 runs each. Target: time per EM iteration ratio <= 1.0.
2. Image grid: PPC with mean field on a 256 x 256 pixel grid (one item per pixel: its 7 x 7
   window reduced to 5 principal components, DESIGN.md Sec. 9) with 4-neighbour links of weight
   w = (1/2) log((1 - q) / q), q the ground truth's neighbour disagreement. The image is the
   texture mosaic of benchmarks/protocol_ppc.py (textures at half scale). Target: the full fit
   (n_init = 1, default tolerances) in under 10 s.

    .venv/bin/python -m benchmarks.bench_ppc            # the tables in docs/ppc.md
    .venv/bin/python -m benchmarks.bench_ppc --quick
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from app.engine import PPC, confidence_to_weight, grid_links, neighbour_disagreement
from benchmarks.protocol_ppc import accuracy, matching, texture_mosaic

ITERATIONS = 10
REPEATS = 3


def blobs(n: int, d: int, k: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, d))
    component = rng.integers(0, k, size=n)
    X = np.empty((n, d))
    for c in range(k):
        rows = component == c
        shape = rng.normal(scale=0.5, size=(d, d)) + np.eye(d)
        X[rows] = centres[c] + rng.normal(size=(int(rows.sum()), d)) @ shape.T
    return X


def best_time(fit: object) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fit()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def no_relations(n: int, d: int, k: int) -> None:
    X = blobs(n, d, k)
    rng = np.random.default_rng(1)
    means = X[rng.choice(n, k, replace=False)]
    cov = np.cov(X, rowvar=False, bias=True) + 1e-6 * np.eye(d)
    covs = np.repeat(cov[None], k, axis=0)
    weights = np.full(k, 1.0 / k)
    ours = PPC(
        k,
        max_iter=ITERATIONS,
        tol=0.0,
        weights_init=weights,
        means_init=means,
        covariances_init=covs,
    )
    ref = GaussianMixture(
        k,
        max_iter=ITERATIONS,
        tol=0.0,
        weights_init=weights,
        means_init=means,
        precisions_init=np.linalg.inv(covs),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours.fit(X[:1000])  # compile / load the kernels outside the timing
        t_ours = best_time(lambda: ours.fit(X))
        t_ref = best_time(lambda: ref.fit(X))
    gap = float(np.abs(ours.means_ - ref.means_).max())
    print(
        f"## Without relations: n = {n:,}, d = {d}, k = {k}, {ITERATIONS} EM iterations, "
        f"best of {REPEATS}\n"
    )
    print("| implementation | fit time | per EM iteration | ratio to GaussianMixture |")
    print("|---|---|---|---|")
    print(f"| GaussianMixture | {t_ref:.3f} s | {1e3 * t_ref / ITERATIONS:.1f} ms | 1.00 |")
    print(
        f"| PPC (no relations) | {t_ours:.3f} s | {1e3 * t_ours / ITERATIONS:.1f} ms | "
        f"{t_ours / t_ref:.2f} |"
    )
    print(f"\nLargest difference of the fitted means: {gap:.1e}")


def two_region_image(
    side: int = 64, seed: int = 0, sd: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """A square region plus a half plane (class 1) on class 0; each pixel's 3 features are
    its class plus Gaussian noise of standard deviation ``sd``. Returns (X, truth grid)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((side, side), dtype=np.int64)
    truth[:, side // 2 :] = 1
    q = side // 4
    truth[q : 2 * q, q // 2 : q // 2 + q] = 1
    X = truth.reshape(-1, 1) + rng.normal(scale=sd, size=(side * side, 3))
    return X, truth


def region_image(
    side: int, k: int, seed: int = 0, sd: float = 1.0, cells: int = 12, d: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Voronoi cells of ``cells`` random sites, cell c of class c mod k; class means are
    standard normal vectors in d dimensions, pixels add noise of standard deviation ``sd``."""
    rng = np.random.default_rng(seed)
    sites = rng.uniform(0, side, size=(cells, 2))
    rows, cols = np.mgrid[0:side, 0:side]
    dist = (rows.reshape(-1, 1) - sites[:, 0]) ** 2 + (cols.reshape(-1, 1) - sites[:, 1]) ** 2
    truth = (np.arange(cells) % k)[dist.argmin(axis=1)]
    X = rng.normal(size=(k, d))[truth] + rng.normal(scale=sd, size=(side * side, d))
    return X, truth.reshape(side, side)


def scribbles(truth: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """Labels (-1 = unlabeled) of horizontal strokes (5 to 20 pixels, inside one region)
    until about ``fraction`` of each class's share of the pixels is labeled."""
    rng = np.random.default_rng(seed)
    width = truth.shape[1]
    flat = truth.ravel()
    labels = np.full(flat.shape[0], -1, dtype=np.int64)
    k = int(flat.max()) + 1
    for c in range(k):
        pixels = np.flatnonzero(flat == c)
        goal = max(1, int(fraction * flat.shape[0] / k))
        while np.count_nonzero(labels == c) < goal:
            r, col = divmod(int(rng.choice(pixels)), width)
            for j in range(col, min(width, col + int(rng.integers(5, 21)))):
                if truth[r, j] != c:
                    break
                labels[r * width + j] = c
    return labels


def pixel_features(image: np.ndarray, window: int = 7, dims: int = 5) -> np.ndarray:
    """The window x window neighbourhood of every pixel (reflect-padded), PCA to ``dims``."""
    pad = window // 2
    padded = np.pad(image, pad, mode="reflect")
    windows = sliding_window_view(padded, (window, window)).reshape(image.size, window * window)
    return PCA(dims, random_state=0).fit_transform(windows)


def image_grid(side: int) -> None:
    image, truth = texture_mosaic(0.5, side // 2)
    X = pixel_features(image)
    q = neighbour_disagreement(truth)
    w = float(confidence_to_weight(1.0 - q))
    pairs, weights = grid_links(side, side, w)
    small_pairs, small_weights = grid_links(8, 8, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # compile / load the kernels outside the timing
        PPC(4, e_step="mean_field", max_iter=2, random_state=0).fit(
            X[:64], small_pairs, small_weights
        )
        start = time.perf_counter()
        model = PPC(4, e_step="mean_field", random_state=0).fit(X, pairs, weights)
    total = time.perf_counter() - start
    labels = model.labels_
    acc = accuracy(labels, truth.ravel(), matching(labels, truth.ravel(), 4))
    print(
        f"\n## Image grid: {side} x {side} pixels ({side * side:,} items, "
        f"{pairs.shape[0]:,} links), q = {q:.4f}, w = {w:.4f}\n"
    )
    print(
        "| fit (mean field, n_init = 1) | EM iterations | per EM iteration | converged | "
        "pixel accuracy |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {total:.2f} s | {model.n_iter_} | {1e3 * total / model.n_iter_:.0f} ms | "
        f"{model.converged_} | {acc:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    args = parser.parse_args()
    if args.quick:
        no_relations(10_000, 10, 10)
        image_grid(64)
    else:
        no_relations(100_000, 10, 10)
        image_grid(256)


if __name__ == "__main__":
    main()
