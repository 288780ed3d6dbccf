"""Starting points for PPC's EM (specs/ppc.md Sec. 3.8).

* ``random``: the spec's paper-faithful start: M distinct random samples as means, the data
  covariance for every component, uniform pi.
* ``kmeans``: as scikit-learn's GaussianMixture: k-means (k-means++ seeding, one run), then the
  Gaussian M-step on its hard assignment. Components that have labeled samples are seeded at
  the mean of those samples, so component c starts where the samples labeled c are (the
  clamp in the E-step then never fights the start), and labeled samples keep their component
  in the assignment the first M-step sees. With groups of samples known to share a component
  (chunklets of hard links, samples of one label), k-means runs in the metric they imply
  (``group_whitening``): EM with full or tied covariances does not depend on a linear change of
  coordinates, but k-means does, and its start decides which local optimum EM ends in.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from app.engine.arrays import FloatArray, IntArray
from app.engine.ppc.mstep import data_covariance, gaussian_m_step

INITS = ("kmeans", "random")
KMEANS_SAMPLE = 20_000
# Shrinkage of the within-group scatter toward its mean variance: a few dozen grouped samples
# estimate a d x d scatter poorly. 0.3 measured best of 0.3 and 0.7 on digits (docs/ppc.md,
# "Starts in the metric of the groups").
GROUP_SHRINKAGE = 0.3
MIN_GROUPED = 3  # grouped samples below which the metric is left alone


def group_whitening(X: FloatArray, group: IntArray) -> FloatArray | None:
    """The linear map under which samples known to share a component scatter alike in every
    direction (relevant component analysis, Bar-Hillel et al. 2005): the inverse square root
    of their within-group scatter, shrunk by ``GROUP_SHRINKAGE`` toward its mean variance.
    ``group`` is one id per sample (-1: in no group; groups of one are ignored); None when fewer
    than ``MIN_GROUPED`` samples are in groups of two or more."""
    grouped = np.flatnonzero(group >= 0)
    ids, inverse, counts = np.unique(group[grouped], return_inverse=True, return_counts=True)
    grouped = grouped[counts[inverse] >= 2]  # a group of one says nothing about spread
    if grouped.shape[0] < MIN_GROUPED:
        return None
    ids, inverse, counts = np.unique(group[grouped], return_inverse=True, return_counts=True)
    sums = np.zeros((ids.shape[0], X.shape[1]))
    np.add.at(sums, inverse, X[grouped])
    centred = X[grouped] - (sums / counts[:, None].astype(np.float64))[inverse]
    scatter = centred.T @ centred / grouped.shape[0]
    d = X.shape[1]
    mean_variance = float(np.trace(scatter)) / d
    if not mean_variance > 0.0:
        return None  # every group is one repeated point
    shrunk = (1.0 - GROUP_SHRINKAGE) * scatter + GROUP_SHRINKAGE * mean_variance * np.eye(d)
    values, vectors = np.linalg.eigh(shrunk)
    return np.asarray((vectors / np.sqrt(values)) @ vectors.T)


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
    X: FloatArray,
    m: int,
    labeled: IntArray,
    label_of: IntArray,
    rng: np.random.RandomState,
    whitening: FloatArray | None = None,
) -> FloatArray:
    """One-hot k-means assignment (labeled samples on their component), in the coordinates
    ``X @ whitening`` when given.

    Beyond ``KMEANS_SAMPLE`` samples (images) k-means runs on a random subset and every
    sample goes to its nearest centre: a start needs the centres, not every sample's vote.
    """
    if whitening is not None:
        X = X @ whitening
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
    whitening: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Weights, means and covariances (in X's own coordinates) from the k-means assignment."""
    nk, means, covariances = gaussian_m_step(
        X, kmeans_resp(X, m, labeled, label_of, rng, whitening), family, reg_covar
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
