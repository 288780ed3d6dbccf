"""Paper-protocol checks: the four toy sets (paper Fig. 4) and scikit-learn digits.

Thresholds (spec smic.md A12, Sec. 8.4): the paper reports ARI 1, 1, 1, 0.773 for one draw of
each toy set. The printed kernel (normalize="none") reproduces the blobs and, on most draws, the
spirals; it fails on circle & Gaussian (the ring is left unclaimed, spec A12). The
degree-normalised kernel reproduces all four. Five fixed seeds per set; results are deterministic,
so the margins below guard regressions rather than sampling noise. Measured means (seeds 0-4):
literal 0.997 / 0.021 / 0.746 (3 of 5 exact) / 0.682; symmetric 0.995 / 0.992 / 1.000 / 0.756.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from sklearn.cluster import SpectralClustering
from sklearn.datasets import load_digits
from sklearn.metrics import adjusted_rand_score

from app.engine import SMIC
from benchmarks.toy_data import TOY_CLUSTERS, make_toy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="slow paper checks skipped without JIT"
    ),
]

SEEDS = range(5)


def _toy_ari(name: str, normalize: str) -> np.ndarray:
    scores = []
    for seed in SEEDS:
        X, y = make_toy(name, 200, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # eigenvalue-tie notices
            model = SMIC(TOY_CLUSTERS[name], normalize=normalize, random_state=seed).fit(X)
        assert model.n_neighbors_ in range(1, 11)
        scores.append(adjusted_rand_score(y, model.labels_))
    return np.array(scores)


@pytest.mark.parametrize(
    ("normalize", "name", "low", "high"),
    [
        # Issue 19: the defaults (normalize="auto"); the 5-draw mean holds (docs/smic.md table).
        ("auto", "four_blobs", 0.95, 1.0),
        ("auto", "circle_gaussian", 0.95, 1.0),
        ("auto", "double_spirals", 0.95, 1.0),
        ("auto", "high_low_densities", 0.6, 0.9),  # paper 0.773: overlapping classes
        # The degree-normalised kernel alone reproduces all four.
        ("symmetric", "four_blobs", 0.95, 1.0),
        ("symmetric", "circle_gaussian", 0.9, 1.0),
        ("symmetric", "double_spirals", 0.95, 1.0),
        ("symmetric", "high_low_densities", 0.65, 0.9),
    ],
)
def test_five_draw_mean_in_band(normalize: str, name: str, low: float, high: float) -> None:
    assert low <= _toy_ari(name, normalize).mean() <= high


def test_literal_kernel_reproduces_blobs() -> None:
    assert _toy_ari("four_blobs", "none").mean() >= 0.95  # paper: 1


def test_literal_kernel_reproduces_spirals_on_most_draws() -> None:
    ari = _toy_ari("double_spirals", "none")
    # Paper: 1. Exact on 3 of these 5 draws; on the other two no t in 1..10 separates the arms
    # with this kernel (its eigenvectors localise on high-degree stretches of one arm).
    assert np.count_nonzero(ari >= 0.99) >= 3


def test_literal_kernel_fails_on_circle_and_gaussian() -> None:
    # Known deviation from the paper's ARI = 1 (spec A12; prototype mean 0.369): the Gaussian
    # hubs outrank the ring's Perron root, so the ring is unclaimed.
    assert _toy_ari("circle_gaussian", "none").mean() <= 0.6


def test_literal_kernel_high_low_densities_in_band() -> None:
    assert 0.55 <= _toy_ari("high_low_densities", "none").mean() <= 0.9  # paper: 0.773


def test_digits_beats_spectral_clustering_with_nearest_neighbour_affinity() -> None:
    X, y = load_digits(return_X_y=True)
    smic = SMIC(10, random_state=0).fit(X)
    ari_smic = adjusted_rand_score(y, smic.labels_)
    std = X.std(axis=0)
    Xs = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    ari_sc = max(
        adjusted_rand_score(
            y, SpectralClustering(10, affinity="nearest_neighbors", random_state=0).fit(Z).labels_
        )
        for Z in (X, Xs)
    )
    # Prototype: t = 9, ARI 0.814; SC (raw / standardised input) 0.756 / 0.707 here.
    assert 0.75 <= ari_smic <= 0.9
    assert ari_smic >= ari_sc
    assert smic.n_neighbors_ >= 4  # t = 1 is far worse (ARI 0.01) and must not win
