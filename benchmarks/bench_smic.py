"""SMIC benchmark: toy-set ARI per draw, digits ARI, and time/ARI against scikit-learn.

Prints tables; asserts nothing. Usage:

    .venv/bin/python -m benchmarks.bench_smic [--quick]
        [--part toy|digits|speed|draws|large|selection|all] [--limit S] [--n N] [--draws K]
        [--blobs N]

--quick uses 2 toy seeds and a 5,000-point synthetic set instead of 10 seeds and 50,000 points.
The peer is SpectralClustering(affinity="nearest_neighbors") with each of its eigensolvers
(arpack, lobpcg, amg); every table ends with SMIC's time as a multiple of the fastest peer and
its ARI beside the best peer ARI. "large" fits the default SMIC alone on --n points (default
200,000) and prints the fit's peak resident memory. "draws" compares default SMIC with
SpectralClustering (lobpcg) on --draws K draws (default 5) of the synthetic set. "selection"
(issue 36) lets each side choose its neighbour count over the same grid t = 1..10 in one run:
SMIC by LSMI, SpectralClustering by the eigengap of the normalised Laplacian or by silhouette,
beside the best t in hindsight; on the toy sets (seed 0), digits and --blobs N synthetic points
(default 20,000; 5,000 with --quick).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components, laplacian
from scipy.sparse.linalg import eigsh
from sklearn.cluster import SpectralClustering
from sklearn.datasets import load_digits, make_blobs
from sklearn.metrics import adjusted_rand_score, silhouette_score
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

from app.engine import SMIC
from benchmarks._limits import within
from benchmarks.toy_data import TOY_CLUSTERS, TOY_SETS, make_toy

PAPER_TOY_ARI = {
    "four_blobs": 1.0,
    "circle_gaussian": 1.0,
    "double_spirals": 1.0,
    "high_low_densities": 0.773,
}


def toy_table(n_seeds: int) -> None:
    print(f"\n## Toy sets (n = 200, n_neighbors='auto', seeds 0..{n_seeds - 1})\n")
    print("Per-draw ARI; chosen = kernel (n = none, s = symmetric) and t; * = ambiguity warning.\n")
    print("| kernel | data set | paper | mean ARI (first 5) | mean ARI | per draw | chosen |")
    print("|---|---|---|---|---|---|---|")
    for normalize in ("auto", "none", "symmetric"):
        for name in TOY_SETS:
            scores, chosen = [], []
            for seed in range(n_seeds):
                X, y = make_toy(name, 200, seed)
                model = SMIC(TOY_CLUSTERS[name], normalize=normalize, random_state=seed).fit(X)
                scores.append(adjusted_rand_score(y, model.labels_))
                flag = "*" if any("ambiguous" in w for w in model.fit_warnings_) else ""
                chosen.append(f"{model.normalize_[0]}{model.n_neighbors_}{flag}")
            arr = np.array(scores)
            print(
                f"| {normalize} | {name} | {PAPER_TOY_ARI[name]:.3f} | {arr[:5].mean():.3f} | "
                f"{arr.mean():.3f} | {' '.join(f'{a:.2f}' for a in arr)} | {' '.join(chosen)} |"
            )


def _solvers() -> tuple[str, ...]:
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return ("arpack", "lobpcg")
    return ("arpack", "lobpcg", "amg")


SC_SOLVERS = _solvers()


Fit = Callable[[NDArray[np.float64]], NDArray[np.int64]]
# Each fit first runs untimed on this many rows of the same data (`within`'s warm-up): the same
# code paths, so the timed fit pays no first-call costs, as in the app, which warms at start-up.
WARM_ROWS = 2000


def _spectral(c: int, solver: str) -> Fit:
    model = SpectralClustering(c, affinity="nearest_neighbors", eigen_solver=solver, random_state=0)
    return lambda data: model.fit(data).labels_


def _print_rows(
    X: NDArray[np.float64], y: NDArray[np.int64], c: int, fixed_t: int, limit: float
) -> None:
    """One table row per method, printed as soon as it is measured (large n takes minutes).

    SpectralClustering gets the raw X: on both data sets its ARI was higher than on the
    standardised X (docs/smic.md); SMIC standardises internally, as in the paper.
    """
    smic_runs: list[tuple[str, Fit]] = [
        ("SMIC default (both kernels, t auto)", lambda d: SMIC(c, random_state=0).fit(d).labels_),
        (
            "SMIC literal kernel, t auto",
            lambda d: SMIC(c, normalize="none", random_state=0).fit(d).labels_,
        ),
        (
            f"SMIC literal kernel, t = {fixed_t} (+1 LSMI score)",
            lambda d: SMIC(c, n_neighbors=fixed_t, normalize="none", random_state=0).fit(d).labels_,
        ),
    ]
    peers = [(f"SpectralClustering nn, {s}", _spectral(c, s)) for s in SC_SOLVERS]
    results: dict[str, tuple[float, float]] = {}
    for label, fit in smic_runs + peers:
        # The limit exists for SpectralClustering's default ARPACK path, which factorises the
        # n x n Laplacian (shift-invert); at n = 50,000 that ran for over 25 minutes.
        run = within(partial(fit, X), limit, warm=partial(fit, X[:WARM_ROWS]))
        if run.value is None:
            print(f"| {label} | stopped | > {limit:.0f} | |", flush=True)
            continue
        ari = adjusted_rand_score(y, run.value)
        results[label] = (ari, run.seconds)
        print(f"| {label} | {ari:.3f} | {run.seconds:.2f} | {run.peak_mib:.0f} |", flush=True)
    peer_rows = [results[p] for p, _ in peers if p in results]
    smic = results.get(smic_runs[0][0])
    if peer_rows and smic is not None:
        fastest = min(t for _, t in peer_rows)
        best_ari = max(a for a, _ in peer_rows)
        print(
            f"\nSMIC default: {smic[1] / fastest:.2f}x the fastest SpectralClustering "
            f"({fastest:.2f} s); ARI {smic[0]:.3f} against the best peer ARI {best_ari:.3f}",
            flush=True,
        )


def digits_table(limit: float) -> None:
    X, y = load_digits(return_X_y=True)
    print(f"\n## scikit-learn digits (n = {X.shape[0]}, d = {X.shape[1]}, c = 10)\n")
    print("| method | ARI | time (s) | peak RSS (MiB) |")
    print("|---|---|---|---|", flush=True)
    _print_rows(X.astype(np.float64), y.astype(np.int64), 10, 7, limit)


def speed_table(n: int, limit: float) -> None:
    X, y = make_blobs(n_samples=n, n_features=10, centers=10, cluster_std=5.0, random_state=0)
    print(f"\n## Synthetic blobs (make_blobs, n = {n}, d = 10, c = 10, cluster_std = 5.0)\n")
    print("| method | ARI | time (s) | peak RSS (MiB) |")
    print("|---|---|---|---|", flush=True)
    _print_rows(X, y.astype(np.int64), 10, 7, limit)


def draws_table(n: int, draws: int, limit: float) -> None:
    """The speed set over several draws (make_blobs seeds 0..draws-1): default SMIC against
    SpectralClustering with lobpcg, the fastest peer at 50,000 points (arpack's shift-invert
    does not finish). One draw's ARI gap could be luck; a gap on every draw is the method."""
    print(f"\n## Default SMIC against SpectralClustering (lobpcg) over {draws} draws, n = {n}\n")
    print("| draw | SMIC ARI | SC ARI | SMIC - SC | SMIC time (s) | SC time (s) |")
    print("|---|---|---|---|---|---|", flush=True)
    fits: list[Fit] = [lambda d: SMIC(10, random_state=0).fit(d).labels_, _spectral(10, "lobpcg")]
    gaps, ratios = [], []
    for seed in range(draws):
        X, y = make_blobs(n, n_features=10, centers=10, cluster_std=5.0, random_state=seed)
        runs = [within(partial(f, X), limit, warm=partial(f, X[:WARM_ROWS])) for f in fits]
        if any(run.value is None for run in runs):
            print(f"| {seed} | stopped after {limit:.0f} s | | | | |", flush=True)
            continue
        smic, sc = (adjusted_rand_score(y, run.value) for run in runs)
        gaps.append(smic - sc)
        ratios.append(runs[0].seconds / runs[1].seconds)
        print(
            f"| {seed} | {smic:.3f} | {sc:.3f} | {smic - sc:+.3f} | {runs[0].seconds:.2f} | "
            f"{runs[1].seconds:.2f} |",
            flush=True,
        )
    if gaps:
        print(
            f"\nSMIC - SC ARI: mean {np.mean(gaps):+.3f}, below on {sum(g < 0 for g in gaps)} "
            f"of {len(gaps)} draws; time ratio SMIC / SC: mean {np.mean(ratios):.2f}",
            flush=True,
        )


def large_table(n: int, limit: float) -> None:
    X, y = make_blobs(n_samples=n, n_features=10, centers=10, cluster_std=5.0, random_state=0)
    print(f"\n## Default SMIC alone on make_blobs, n = {n} (d = 10, c = 10)\n")
    run = within(
        lambda: SMIC(10, random_state=0).fit(X).labels_,
        limit,
        warm=lambda: SMIC(10, random_state=0).fit(X[:WARM_ROWS]),
    )
    if run.value is None:
        print(f"stopped after {limit:.0f} s", flush=True)
        return
    ari = adjusted_rand_score(y, run.value)
    peak = run.peak_mib
    print(f"ARI {ari:.3f}, {run.seconds:.1f} s, peak RSS of the fitting process {peak:.0f} MiB")


# ---------------------------------------------------------------- choosing n_neighbors (issue 36)
# SMIC's default grid (t = 1..max_neighbors = 10 nearest *other* points). SpectralClustering's
# kneighbors_graph counts the point itself (include_self=True), so its n_neighbors = t + 1 is the
# graph on the same t other neighbours: the same grid of graphs, not shifted by one.
# Every method of this part runs with one BLAS / OpenMP thread, as SMIC's LSMI and eigensolves
# already do: on the shared 2-core machine (load 5-6) threaded BLAS made SpectralClustering 5-8x
# slower (n = 5,000, n_neighbors = 11: 5.6 s against 0.7 s with one thread), which would measure
# the machine's load, not the selection.
SELECTION_GRID = tuple(range(1, 11))
SELECTION_SOLVER = "lobpcg"  # the fastest SpectralClustering peer at 50,000 points (--part draws)
SILHOUETTE_SAMPLE = 5000  # silhouette on a fixed seeded sample above this many points
DENSE_SPECTRUM = 200  # graph components up to this size get a dense eigvalsh


def sc_affinities(X: NDArray[np.float64], grid: Sequence[int]) -> list[sp.csr_matrix]:
    """SpectralClustering's affinity for n_neighbors = t + 1, for every t of the grid, from one
    neighbour search: 0.5 (C + C^T), C the 0/1 kNN connectivity including the point itself."""
    n = X.shape[0]
    k_max = min(max(grid) + 1, n)
    idx = NearestNeighbors(n_neighbors=k_max).fit(X).kneighbors(X, return_distance=False)
    graphs = []
    for t in grid:
        k = min(t + 1, n)
        rows = np.repeat(np.arange(n), k)
        C = sp.csr_matrix((np.ones(n * k), (rows, idx[:, :k].ravel())), shape=(n, n))
        graphs.append(sp.csr_matrix(0.5 * (C + C.T)))
    return graphs


def _smallest_eigenvalues(affinity: sp.csr_matrix, m: int) -> NDArray[np.float64]:
    """The m smallest eigenvalues of the normalised Laplacian of a connected graph: 1 - the m
    largest of I - L, which ARPACK finds without shift-invert (no LU of L); dense when small."""
    n = affinity.shape[0]
    L = laplacian(affinity, normed=True)
    if n <= DENSE_SPECTRUM:
        return np.linalg.eigvalsh(L.toarray())[:m]
    v0 = np.random.RandomState(0).uniform(-1.0, 1.0, n)
    ncv = min(n, max(2 * m + 1, 40))
    top = eigsh(sp.identity(n, format="csr") - L, m, which="LA", v0=v0, ncv=ncv, tol=1e-10)[0]
    return np.sort(1.0 - top)


def eigengap(affinity: sp.csr_matrix, k: int) -> float:
    """lambda_{k+1} - lambda_k of the normalised Laplacian (eigenvalues ascending, 1-based).

    The spectrum of a disconnected graph is the union of its components' spectra, so each
    component is solved alone: ARPACK misses copies of a repeated eigenvalue 0 (on digits at
    t = 2, 8 components, it returned a gap of 0.0013 where the dense spectrum has 0.0003). More
    than k components give lambda_1 = ... = lambda_{k+1} = 0: gap 0."""
    n_comp, comp = connected_components(affinity, directed=False)
    if n_comp > k:
        return 0.0
    parts = []
    for j in range(n_comp):
        members = np.flatnonzero(comp == j)
        sub = sp.csr_matrix(affinity[members][:, members])
        parts.append(_smallest_eigenvalues(sub, min(k + 1, members.size)))
    lam = np.sort(np.concatenate(parts))
    return float(lam[k] - lam[k - 1])


def silhouette(X: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """Silhouette on the features SpectralClustering saw; a fixed seeded sample above
    SILHOUETTE_SAMPLE points (the same sample for every t); -1 for a single cluster."""
    if np.unique(labels).size < 2:
        return -1.0
    sample = SILHOUETTE_SAMPLE if X.shape[0] > SILHOUETTE_SAMPLE else None
    return float(silhouette_score(X, labels, sample_size=sample, random_state=0))


@dataclass(frozen=True)
class GridRun:
    """SpectralClustering fitted at every t, with both criteria; seconds measured in the child.
    gap_seconds: the neighbour search plus every Laplacian spectrum (eigengap needs no fit)."""

    labels: list[NDArray[np.int64]]
    fit_seconds: list[float]
    gaps: list[float]
    gap_seconds: float
    silhouettes: list[float]
    silhouette_seconds: list[float]


def sc_grid(X: NDArray[np.float64], c: int, grid: Sequence[int]) -> GridRun:
    with threadpool_limits(limits=1):
        return _sc_grid(X, c, grid)


def _sc_grid(X: NDArray[np.float64], c: int, grid: Sequence[int]) -> GridRun:
    start = time.perf_counter()
    gaps = [eigengap(A, c) for A in sc_affinities(X, grid)]
    gap_seconds = time.perf_counter() - start
    labels, fit_seconds, sils, sil_seconds = [], [], [], []
    for t in grid:
        model = SpectralClustering(
            c,
            affinity="nearest_neighbors",
            n_neighbors=min(t + 1, X.shape[0]),
            eigen_solver=SELECTION_SOLVER,
            random_state=0,
        )
        start = time.perf_counter()
        labels.append(model.fit(X).labels_.astype(np.int64))
        fit_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        sils.append(silhouette(X, labels[-1]))
        sil_seconds.append(time.perf_counter() - start)
    return GridRun(labels, fit_seconds, gaps, gap_seconds, sils, sil_seconds)


@dataclass(frozen=True)
class SmicRun:
    labels: NDArray[np.int64]
    t: int
    normalize: str
    curve: dict[int, float]  # LSMI per evaluated t, chosen kernel
    n_candidates: int  # (kernel, t) pairs evaluated


def smic_choice(X: NDArray[np.float64], c: int) -> SmicRun:
    with threadpool_limits(limits=1):
        model = SMIC(c, max_neighbors=max(SELECTION_GRID), random_state=0).fit(X)
    return SmicRun(
        model.labels_,
        model.n_neighbors_,
        model.normalize_,
        dict(model.lsmi_curve_),
        sum(len(curve) for curve in model.lsmi_curves_.values()),
    )


def selection_sets(n: int) -> list[tuple[str, NDArray[np.float64], NDArray[np.int64], int]]:
    sets = []
    for name in TOY_SETS:
        X, y = make_toy(name, 200, 0)
        sets.append((f"{name} (n = 200, seed 0)", X, y.astype(np.int64), TOY_CLUSTERS[name]))
    Xd, yd = load_digits(return_X_y=True)
    sets.append(("digits (n = 1797, c = 10)", Xd.astype(np.float64), yd.astype(np.int64), 10))
    Xb, yb = make_blobs(n, n_features=10, centers=10, cluster_std=5.0, random_state=0)
    sets.append((f"blobs (n = {n}, d = 10, c = 10)", Xb, yb.astype(np.int64), 10))
    return sets


def _row(name: str, *cells: object) -> str:
    return "| " + " | ".join([name, *map(str, cells)]) + " |"


def selection_table(n: int, limit: float) -> None:
    """SMIC choosing t by LSMI against SpectralClustering choosing n_neighbors by eigengap or
    silhouette, over the same graphs (t = 1..10 other neighbours), same data, same seeds."""
    grid = SELECTION_GRID
    print(f"\n## Choosing n_neighbors: LSMI against unsupervised criteria (t = 1..{grid[-1]})\n")
    print(
        f"SpectralClustering nn ({SELECTION_SOLVER}, assign_labels='kmeans', random_state=0) "
        "gets n_neighbors = t + 1 (it counts the point itself), i.e. the same t other "
        "neighbours as SMIC's t. Time covers everything a method needs to choose and return "
        "labels: SMIC, its whole default fit; eigengap, one neighbour search, the Laplacian "
        "spectrum of every t and one SpectralClustering fit at the chosen t; silhouette, a "
        "fit and a silhouette score at every t. Per candidate = total / candidates. "
        "One BLAS / OpenMP thread for every method.\n",
        flush=True,
    )
    summary = []
    for name, X, y, c in selection_sets(n):
        smic_run = within(
            partial(smic_choice, X, c), limit, warm=partial(smic_choice, X[:WARM_ROWS], c)
        )
        sc_run = within(
            partial(sc_grid, X, c, grid), limit, warm=partial(sc_grid, X[:WARM_ROWS], c, grid)
        )
        print(f"\n### {name}\n")
        print(
            "| method | chooses by | chosen t | ARI | total time (s) | candidates | "
            "per candidate (s) |"
        )
        print("|---|---|---|---|---|---|---|")
        if smic_run.value is None or sc_run.value is None:
            print(f"stopped after {limit:.0f} s", flush=True)
            continue
        s, g = smic_run.value, sc_run.value
        aris = [adjusted_rand_score(y, lab) for lab in g.labels]
        smic_ari = adjusted_rand_score(y, s.labels)
        kernel = "literal" if s.normalize == "none" else "normalised"
        per = smic_run.seconds / s.n_candidates
        print(
            _row(
                "SMIC default (both kernels)", "LSMI", f"{s.t} ({kernel})", f"{smic_ari:.3f}",
                f"{smic_run.seconds:.2f}", f"{s.n_candidates} (kernel, t)", f"{per:.3f}",
            )
        )  # fmt: skip
        i_gap = int(np.argmax(g.gaps))  # ties: the smaller t
        i_sil = int(np.argmax(g.silhouettes))
        i_best = int(np.argmax(aris))
        gap_time = g.gap_seconds + g.fit_seconds[i_gap]
        sil_time = sum(g.fit_seconds) + sum(g.silhouette_seconds)
        fit_time = sum(g.fit_seconds)
        m = len(grid)
        for label, i, seconds in (
            ("eigengap", i_gap, gap_time),
            ("silhouette", i_sil, sil_time),
            ("ARI against the truth (oracle)", i_best, fit_time),
        ):
            print(
                _row(
                    f"SpectralClustering nn, {SELECTION_SOLVER}", label, grid[i],
                    f"{aris[i]:.3f}", f"{seconds:.2f}", f"{m} t", f"{seconds / m:.3f}",
                )
            )  # fmt: skip
        print(
            f"\nSMIC time / SC eigengap {smic_run.seconds / gap_time:.2f}, / SC silhouette "
            f"{smic_run.seconds / sil_time:.2f}; one SC fit {fit_time / m:.3f} s on average, "
            f"one eigengap {g.gap_seconds / m:.3f} s (neighbour search included)\n"
        )
        print("| t | SC ARI | eigengap | silhouette | SC fit (s) | SMIC LSMI (chosen kernel) |")
        print("|---|---|---|---|---|---|")
        for i, t in enumerate(grid):
            lsmi = f"{s.curve[t]:.3f}" if t in s.curve else "-"
            print(
                f"| {t} | {aris[i]:.3f} | {g.gaps[i]:.4f} | {g.silhouettes[i]:.3f} | "
                f"{g.fit_seconds[i]:.3f} | {lsmi} |",
                flush=True,
            )
        summary.append(
            (name, (s.t, smic_ari, smic_run.seconds), (grid[i_gap], aris[i_gap], gap_time),
             (grid[i_sil], aris[i_sil], sil_time), (grid[i_best], aris[i_best]))
        )  # fmt: skip
    print("\n### Summary: chosen t / ARI / total time (s)\n")
    print("| data set | SMIC, LSMI | SC, eigengap | SC, silhouette | SC oracle t / ARI |")
    print("|---|---|---|---|---|")
    for name, *choices, (t_best, ari_best) in summary:
        cells = [f"{t} / {ari:.3f} / {sec:.2f}" for t, ari, sec in choices]
        print(_row(name, *cells, f"{t_best} / {ari_best:.3f}"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument(
        "--part",
        choices=("toy", "digits", "speed", "draws", "large", "selection", "all"),
        default="all",
    )
    parser.add_argument("--n", type=int, default=200_000, help="points for --part large")
    parser.add_argument("--draws", type=int, default=5, help="draws for --part draws")
    parser.add_argument(
        "--blobs", type=int, default=20_000, help="synthetic points for --part selection"
    )
    parser.add_argument(
        "--limit", type=float, default=600.0, help="seconds before a fit is stopped (default 600)"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # tie / non-PSD warnings are reported by the tests
    if args.part in ("toy", "all"):
        toy_table(2 if args.quick else 10)
    if args.part in ("digits", "all"):
        digits_table(args.limit)
    if args.part in ("speed", "all"):
        speed_table(5_000 if args.quick else 50_000, args.limit)
    if args.part in ("draws", "all"):
        draws_table(5_000 if args.quick else 50_000, args.draws, args.limit)
    if args.part in ("large", "all"):
        large_table(args.n, args.limit)
    if args.part in ("selection", "all"):
        selection_table(5_000 if args.quick else args.blobs, args.limit)


if __name__ == "__main__":
    main()
