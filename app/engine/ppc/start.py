"""Starting points for PPC's EM (specs/ppc.md Sec. 3.8).

* ``random``: the spec's paper-faithful start: M distinct random samples as means, the data
  covariance for every component, uniform pi.
* ``kmeans``: as scikit-learn's GaussianMixture: k-means (k-means++ seeding, one run), then the
  Gaussian M-step on its hard assignment. Components that have labeled samples are seeded at
  the mean of those samples, so component c starts where the samples labeled c are (the
  clamp in the E-step then never fights the start), and labeled samples keep their component
  in the assignment the first M-step sees.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.cluster import KMeans

from app.engine.ppc.mstep import data_covariance, gaussian_m_step

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

INITS = ("kmeans", "random")
KMEANS_SAMPLE = 20_000


def random_means(
    X: FloatArray, m: int, labeled: IntArray, label_of: IntArray, rng: np.random.RandomState
) -> FloatArray:
    """Labeled components at their samples' mean, the others at distinct random samples."""
    means = X[rng.choice(X.shape[0], m, replace=False)].copy()
    for c in np.unique(label_of):
        means[c] = X[labeled[label_of == c]].mean(axis=0)
    return means


def _seeded_centres(
    pool: FloatArray, known: dict[int, FloatArray], m: int, rng: np.random.RandomState
) -> FloatArray:
    """Labeled components at their samples' mean; the rest by k-means++ (D^2) sampling."""
    centres = np.empty((m, pool.shape[1]))
    d2 = np.full(pool.shape[0], np.inf)
    for c, mean in known.items():
        centres[c] = mean
        d2 = np.minimum(d2, ((pool - mean) ** 2).sum(axis=1))
    for c in sorted(set(range(m)) - set(known)):
        total = float(d2.sum())
        pick = int(rng.choice(pool.shape[0], p=d2 / total)) if total > 0 else 0
        centres[c] = pool[pick]
        d2 = np.minimum(d2, ((pool - centres[c]) ** 2).sum(axis=1))
    return centres


def kmeans_resp(
    X: FloatArray, m: int, labeled: IntArray, label_of: IntArray, rng: np.random.RandomState
) -> FloatArray:
    """One-hot k-means assignment (labeled samples on their component).

    Beyond ``KMEANS_SAMPLE`` samples (images) k-means runs on a random subset and every
    sample goes to its nearest centre: a start needs the centres, not every sample's vote.
    """
    n = X.shape[0]
    pool = X if n <= KMEANS_SAMPLE else X[rng.choice(n, KMEANS_SAMPLE, replace=False)]
    init: FloatArray | str = "k-means++"
    if labeled.shape[0]:
        known = {int(c): X[labeled[label_of == c]].mean(axis=0) for c in np.unique(label_of)}
        init = _seeded_centres(pool, known, m, rng)
    model = KMeans(m, init=init, n_init=1, random_state=rng).fit(pool)
    assign = model.labels_ if pool is X else model.predict(X)
    assign = assign.astype(np.int64)
    assign[labeled] = label_of
    resp = np.zeros((n, m))
    resp[np.arange(n), assign] = 1.0
    return resp


def kmeans_start(
    X: FloatArray,
    m: int,
    family: int,
    reg_covar: float,
    labeled: IntArray,
    label_of: IntArray,
    rng: np.random.RandomState,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Weights, means and covariances from the k-means assignment."""
    nk, means, covariances = gaussian_m_step(
        X, kmeans_resp(X, m, labeled, label_of, rng), family, reg_covar
    )
    return nk / nk.sum(), means, covariances


def random_start(
    X: FloatArray,
    m: int,
    family: int,
    reg_covar: float,
    labeled: IntArray,
    label_of: IntArray,
    rng: np.random.RandomState,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    means = random_means(X, m, labeled, label_of, rng)
    return np.full(m, 1.0 / m), means, data_covariance(X, family, m, reg_covar)
