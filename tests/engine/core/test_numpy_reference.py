"""The engine's Hartigan loop against benchmarks/bench_cec.py's straightforward NumPy one (per
point and cluster: the updated covariance and its slogdet), from the same k-means++ start: the
same final partition and energy. bench_cec checks it at n = 2,000 and 10,000; this is the small
case that runs with every test run (issue 36: the oracle had silently stopped holding)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from app.engine import CECIB
from app.engine.core.seeding import initial_partition
from benchmarks.bench_cec import numpy_hartigan


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_same_start_same_partition_as_the_numpy_loop(beta: float) -> None:
    rng = np.random.default_rng(4)
    k, d, n, eps = 5, 3, 400, 0.02
    centres = rng.normal(scale=4.0, size=(k, d))
    component = rng.integers(k, size=n)
    scale = rng.uniform(0.5, 1.5, size=(k, 1))
    X = centres[component] + rng.normal(size=(n, d)) * scale[component]
    y = np.where(rng.random(n) < 0.1, component, -1)
    start = initial_partition(X, k, "k-means++", np.random.RandomState(0))
    labels, energy, sweeps = numpy_hartigan(X, y, start, beta, max(eps * n, d + 2), 100)
    model = CECIB(
        k, beta=beta, n_init=1, min_cluster_fraction=eps, random_state=0, polish=False
    ).fit(X, y)
    assert adjusted_rand_score(labels, model.labels_) == 1.0
    assert model.energy_ == pytest.approx(energy, abs=1e-9)
    assert model.n_iter_ == sweeps
