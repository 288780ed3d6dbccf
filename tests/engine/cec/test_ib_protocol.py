"""The paper's protocol (Sec. 5.2) on iris and wine, as in benchmarks/protocol_cec_ib.py.

k = 2 x classes, 10 random labelings, default n_init = 10. The floors come from the protocol
run reported in docs/cec-ib.md and from reference partitions of iris:

* a partition that is pure but splits every class in two has NMI 2 ln 3 / (ln 3 + ln 6) = 0.76,
  and "setosa vs the rest" has 0.73; CEC ends with 5-6 clusters on iris (Table 2 of the paper:
  5), so about 0.75 is what a label-consistent CEC-IB partition can reach; unsupervised CEC
  scores 0.72 on average and a random partition about 0.01. Floor: 0.70.
* wine with 20% labels reaches 0.82 on average against 0.60 for unsupervised CEC and 0.57 for
  GaussianMixture with the true k. Floor: 0.70, clearly above both.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from app.engine import CECIB, label_constraint_satisfaction
from benchmarks.protocol_cec_ib import partial_labels, run_cec_ib, run_gmm

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="paper protocol needs the JIT"
    ),
]

RUNS = 10


def test_iris_with_20_percent_labels() -> None:
    X, truth = load_iris(return_X_y=True)
    nmi, _, clusters = run_cec_ib(X, truth, 0.2, 1.0, RUNS)
    unsupervised, _, _ = run_cec_ib(X, truth, 0.0, 1.0, RUNS)
    assert np.mean(nmi) >= 0.70
    assert np.mean(nmi) >= np.mean(unsupervised)  # clean labels do not hurt
    assert 4.0 <= np.mean(clusters) <= 6.0  # Table 2: 5 clusters from k = 6
    for seed in range(3):
        y = partial_labels(truth, 0.2, seed)
        labels = CECIB(6, beta=1.0, polish=False, random_state=seed).fit(X, y).labels_
        # beta = 1: no cluster mixes two labeled classes
        assert label_constraint_satisfaction(labels, y).cannot_link == 1.0


def test_wine_with_20_percent_labels() -> None:
    X, truth = load_wine(return_X_y=True)
    nmi, _, clusters = run_cec_ib(X, truth, 0.2, 1.0, RUNS)
    unsupervised, _, _ = run_cec_ib(X, truth, 0.0, 1.0, RUNS)
    gmm = run_gmm(X, truth, RUNS)
    assert np.mean(nmi) >= 0.70
    assert np.mean(nmi) > np.mean(unsupervised) + 0.1
    assert np.mean(nmi) > np.mean(gmm) + 0.1
    assert np.mean(clusters) <= 4.0  # Table 2: 3 clusters from k = 6


def test_noisy_label_weight_also_uses_labels_on_wine() -> None:
    """beta_0 = 0.27 (CEC-IB_0) with 10% labels is no worse than no labels on average."""
    X, truth = load_wine(return_X_y=True)
    nmi, _, _ = run_cec_ib(X, truth, 0.1, 0.26978, RUNS)
    unsupervised, _, _ = run_cec_ib(X, truth, 0.0, 1.0, RUNS)
    assert np.mean(nmi) >= np.mean(unsupervised)


def test_the_engine_defaults_reach_the_authors_energy() -> None:
    """Issue 36's parity target: on 24 configurations of the paper protocol (iris and wine;
    10/20/30% labeled; beta 1 and beta_0; two labelings; k = 6, eps = 0.05, n_init = 10) the
    engine's defaults end at or below the best of 10 plain k-means++ starts (the authors'
    procedure) in at least 22, and every energy is finite (no singular cluster)."""
    from benchmarks.protocol_cec_ib import energy_rows

    rows = energy_rows()
    assert len(rows) == 24
    assert all(np.isfinite(r.ours) for r in rows)
    assert sum(r.at_or_below for r in rows) >= 22
