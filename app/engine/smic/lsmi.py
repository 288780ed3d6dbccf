"""LSMI: least-squares SMI estimate of (x, y) pairs, class-wise, with M-fold CV over (gamma, delta).

Spec smic.md Sec. 3.2-3.6 and decision A9: the b Gaussian centres and the fold of every sample are
drawn once (an `LSMIDesign`) and shared by every candidate labelling, so LSMI values of different
candidates t are comparable (common random numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from app.engine.arrays import FloatArray, IndexArray
from app.engine.smic.holdout import holdout_errors

# Paper Sec. 4.3.1: 9 x 9 grid.
DEFAULT_GAMMAS: FloatArray = 10.0 ** np.arange(-2.0, 2.01, 0.5)
DEFAULT_DELTAS: FloatArray = 10.0 ** np.arange(-3.0, 1.01, 0.5)
# LSMI scores a labelling on at most this many samples (a seeded subset shared by every
# candidate). Its cost is linear in the samples (n x b basis per gamma) and it only has to
# rank candidates: at n = 50,000 it took 1.35 s per labelling on all samples.
MAX_LSMI_SAMPLES = 5000


@dataclass(frozen=True)
class LSMIDesign:
    """Centres (indices into X), fold id per sample, and squared distances to the centres.

    The per-fold Gram matrices sum_{i in fold} L_i L_i^T do not depend on the labels, so they are
    computed once per gamma and shared by every candidate labelling (`fold_grams`).
    """

    rows: IndexArray  # the samples LSMI uses (all n when n <= MAX_LSMI_SAMPLES)
    centres: IndexArray  # indices into rows
    folds: IndexArray
    n_folds: int
    sq_dist: FloatArray
    _grams: dict[float, FloatArray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _bases: dict[float, FloatArray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _stacks: dict[tuple[float, ...], tuple[FloatArray, FloatArray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )


@dataclass(frozen=True)
class LSMIResult:
    value: float
    gamma: float
    delta: float
    cv: FloatArray  # (len(gammas), len(deltas)) mean hold-out error


def make_design(
    X: FloatArray,
    n_basis: int,
    n_folds: int,
    rng: np.random.RandomState,
    max_samples: int = MAX_LSMI_SAMPLES,
) -> LSMIDesign:
    n_all = X.shape[0]
    if n_all > max_samples:
        rows = np.sort(rng.permutation(n_all)[:max_samples]).astype(np.intp)
    else:  # no draw, so small data sets see the same random stream as before
        rows = np.arange(n_all, dtype=np.intp)
    Xr = X[rows]
    n = rows.size
    centres = np.sort(rng.permutation(n)[: min(n_basis, n)]).astype(np.intp)
    m = min(n_folds, n)
    folds = rng.permutation(np.arange(n) % m).astype(np.intp)
    return LSMIDesign(
        rows=rows,
        centres=centres,
        folds=folds,
        n_folds=m,
        sq_dist=cdist(Xr, Xr[centres], "sqeuclidean"),
    )


def basis(design: LSMIDesign, gamma: float) -> FloatArray:
    """L(x_i, x_l) = exp(-||x_i - x_l||^2 / (2 gamma^2)), samples i by centres l (eq. 11).

    Cached per gamma: it does not depend on the labels (at most MAX_LSMI_SAMPLES x b each).
    """
    key = float(gamma)
    if key not in design._bases:
        design._bases[key] = np.exp(-design.sq_dist / (2.0 * gamma * gamma))
    return design._bases[key]


def lsmi_fixed(
    L: FloatArray, labels: IndexArray, centre_labels: IndexArray, delta: float
) -> tuple[float, FloatArray]:
    """LSMI (eq. 14, closed form) and theta for one (gamma, delta), fitted on all samples.

    Class-wise solve of eq. 13 (footnote 4: the joint system is block-diagonal by class).
    theta is returned in centre order; a class without centres has r(., y) = 0.
    """
    n, b = L.shape
    theta = np.zeros(b)
    value = 0.0
    for y in np.unique(centre_labels):
        cols = np.flatnonzero(centre_labels == y)
        Ly = L[:, cols]
        members = labels == y
        H = (members.sum() / n**2) * (Ly.T @ Ly)
        h = Ly[members].sum(axis=0) / n
        th = np.linalg.solve(H + delta * np.eye(cols.size), h)
        theta[cols] = th
        value += float(th @ h - 0.5 * th @ H @ th)
    return value - 0.5, theta


def fold_grams(design: LSMIDesign, gamma: float, L: FloatArray) -> FloatArray:
    """(n_folds, b, b): sum_{i in fold} L_i L_i^T over every sample of the fold, cached per gamma.

    The class-y Gram of eq. 13 sums over *all* samples (only its scale n_y / n^2 depends on the
    labels), so it is the (cols, cols) block of these matrices.
    """
    key = float(gamma)
    if key not in design._grams:
        grams = np.empty((design.n_folds, L.shape[1], L.shape[1]))
        for m in range(design.n_folds):
            Lm = L[design.folds == m]
            grams[m] = Lm.T @ Lm
        design._grams[key] = grams
    return design._grams[key]


def _stacked(design: LSMIDesign, gammas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Label-free arrays for a gamma grid, cached: the bases side by side, (n, G * b), and the
    fold Grams, (G, M, b, b)."""
    key = tuple(float(g) for g in gammas)
    if key not in design._stacks:
        bases = [basis(design, g) for g in key]
        grams = np.stack([fold_grams(design, g, L) for g, L in zip(key, bases, strict=True)])
        design._stacks[key] = (np.hstack(bases), grams)
    return design._stacks[key]


def _fold_class_sums(L: FloatArray, labels: IndexArray, design: LSMIDesign) -> FloatArray:
    """(n_folds, n_labels, columns of L): sum of L_i over the samples of each (fold, label) cell.

    One sparse one-hot product instead of a boolean-indexed copy of L per class and fold.
    """
    n_labels = int(labels.max()) + 1
    cell = design.folds * n_labels + labels
    onehot = sp.csr_matrix(
        (np.ones(labels.size), (cell, np.arange(labels.size))),
        shape=(design.n_folds * n_labels, labels.size),
    )
    return np.asarray(onehot @ L).reshape(design.n_folds, n_labels, L.shape[1])


def lsmi_cv(
    design: LSMIDesign, labels: IndexArray, gammas: FloatArray, deltas: FloatArray
) -> LSMIResult:
    """Choose (gamma, delta) by M-fold CV of the hold-out error, then LSMI on all samples.

    The Gram matrices come from the label-free cache, so a labelling costs one sparse product
    for the per-(fold, label) sums and one compiled pass over (gamma, class, fold)
    (`holdout.holdout_errors`). `labels` holds one label per sample of X; only those of
    `design.rows` are used.
    """
    labels = labels[design.rows]
    centre_labels = labels[design.centres]
    bases, grams = _stacked(design, gammas)
    b = design.centres.size
    n_labels = int(labels.max()) + 1
    # One sparse product for every gamma: (M, labels, G * b) -> (G, M, labels, b).
    flat = _fold_class_sums(bases, labels, design)
    sums = np.ascontiguousarray(
        flat.reshape(design.n_folds, n_labels, gammas.size, b).transpose(2, 0, 1, 3)
    )
    counts = np.bincount(design.folds * n_labels + labels, minlength=design.n_folds * n_labels)
    order = np.argsort(centre_labels, kind="stable").astype(np.intp)
    class_ids, class_starts = np.unique(centre_labels[order], return_index=True)
    cv = holdout_errors(
        grams,
        sums,
        counts.reshape(design.n_folds, n_labels).astype(np.float64),
        np.bincount(design.folds, minlength=design.n_folds).astype(np.float64),
        order,
        np.append(class_starts, order.size).astype(np.intp),
        class_ids.astype(np.intp),
        np.ascontiguousarray(deltas, dtype=np.float64),
    )
    g_best, d_best = np.unravel_index(int(np.argmin(cv)), cv.shape)  # ties: first in grid order
    gamma, delta = float(gammas[g_best]), float(deltas[d_best])
    value, _ = lsmi_fixed(basis(design, gamma), labels, centre_labels, delta)
    return LSMIResult(value=value, gamma=gamma, delta=delta, cv=cv)
