"""`benchmarks.bench_smic --part selection`: the eigengap and silhouette criteria by which
SpectralClustering chooses n_neighbors (issue 36), on a case where only some t give the right
graph. No SMIC fit, so the result does not depend on numba's JIT mode."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components, laplacian
from sklearn.metrics import adjusted_rand_score

from benchmarks import bench_smic
from benchmarks.bench_smic import eigengap, sc_affinities, sc_grid, silhouette

GRID = (1, 4, 11, 15)


def two_blobs() -> tuple[np.ndarray, np.ndarray]:
    """Two blobs of 12 points, 20 apart with radius about 1: t = 1 (each point and its nearest
    neighbour) breaks them into pieces, t = 4 and t = 11 (each point joined to its whole blob)
    give exactly the two blobs, t = 15 (16 points with itself, more than a blob) joins them."""
    rng = np.random.RandomState(0)
    X = rng.normal(0.0, 0.5, (24, 2))
    X[12:, 0] += 20.0
    return X, np.repeat([0, 1], 12)


def test_the_grid_gives_too_many_the_right_and_too_few_components() -> None:
    X, _ = two_blobs()
    counts = [connected_components(A, directed=False)[0] for A in sc_affinities(X, GRID)]
    assert counts[0] > 2 and counts[1] == counts[2] == 2 and counts[3] == 1


@pytest.mark.filterwarnings("ignore:Graph is not fully connected")
def test_eigengap_and_silhouette_choose_the_t_that_separates_the_blobs() -> None:
    X, y = two_blobs()
    run = sc_grid(X, 2, GRID)
    assert run.gaps[0] == 0.0  # more than 2 components: lambda_1 = lambda_2 = lambda_3 = 0
    # lambda_3 - lambda_2: 0.39 at t = 4, 1.09 at t = 11 (complete blobs), 0.57 at t = 15
    assert GRID[int(np.argmax(run.gaps))] == 11
    chosen = int(np.argmax(run.silhouettes))
    assert adjusted_rand_score(y, run.labels[chosen]) == 1.0
    assert run.silhouettes[chosen] > 0.9


def test_silhouette_prefers_the_true_split_and_refuses_one_cluster() -> None:
    X, y = two_blobs()
    wrong = np.tile([0, 1], 12)
    assert silhouette(X, y) > 0.9 > silhouette(X, wrong)
    assert silhouette(X, np.zeros(24, dtype=np.int64)) == -1.0


@pytest.mark.parametrize("t", GRID)
def test_eigengap_by_arpack_per_component_matches_the_dense_spectrum(
    t: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, _ = two_blobs()
    A = sc_affinities(X, GRID)[GRID.index(t)]
    lam = np.linalg.eigvalsh(laplacian(A, normed=True).toarray())
    monkeypatch.setattr(bench_smic, "DENSE_SPECTRUM", 8)  # blobs of 12: ARPACK per component
    assert eigengap(A, 2) == pytest.approx(lam[2] - lam[1], abs=1e-8)
