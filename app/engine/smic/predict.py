"""SMIC's out-of-sample rule (spec smic.md Sec. 2.6, decision A7): the fitted posterior model
p(y | x) = sum_i alpha_{y,i} K(x, x_i) evaluated at new points.

The sparse local-scaling kernel is extended to a new point x' as the spec recommends: its scale
sigma' is the distance to its t-th nearest training point, and K(x', x_i) =
exp(-|x' - x_i|^2 / (2 sigma' sigma_i)) when x_i is among those t points or |x' - x_i| <= sigma_i
(x' would be among x_i's t nearest neighbours); the training sigma_i are kept. A query at
distance 0 from a training point is that point: the match is its diagonal entry (K = 1) and not
one of its t neighbours, so a training point queried again gets exactly its training row of K
(without constraint edits, duplicates and distance ties), and predict agrees with labels_.
With the degree-normalised kernel the row is divided by sqrt(d' d_i), d' being the row sum with
the query's own diagonal 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from app.engine.arrays import FloatArray, IndexArray

# Queries per block of the reverse-neighbour search: bounds its memory on large inputs.
CHUNK = 2048


@dataclass(frozen=True)
class KernelModel:
    """What the out-of-sample rule needs from a fit."""

    center: FloatArray  # (d,) subtracted from a query (the standardisation of the fit)
    scale: FloatArray  # (d,) then divided by this
    X: FloatArray  # (n, d) training points, standardised
    sigma: FloatArray  # (n,) training local scales for t
    t: int
    coef: FloatArray  # (n, c): posterior(x') = max(0, K(x', .) @ coef) / sqrt(d')
    normalized: bool  # the degree-normalised kernel was chosen
    search: NearestNeighbors


def kernel_model(
    center: FloatArray,
    scale: FloatArray,
    X: FloatArray,
    sigma: FloatArray,
    t: int,
    K: sp.csr_matrix,
    eigen: tuple[FloatArray, FloatArray],
    prior: FloatArray,
    normalized: bool,
    algorithm: str,
) -> KernelModel:
    """The model of the chosen candidate: ``K`` its unnormalised training kernel (with any
    constraint edits), ``eigen`` its top-c (eigenvalues, eigenvectors) and ``prior`` the sorted
    class prior; ``algorithm`` the fit's neighbour search (kernel.neighbour_algorithm).
    alpha_y = n pi_y phi~_y / (lambda_y sum_i max(0, phi~_y,i)) (Sec. 2.5 #5); a component
    with lambda_y <= 0 cannot claim new points (its column is 0: the fit warned)."""
    values, vectors = eigen
    n = X.shape[0]
    signs = np.where(vectors.sum(axis=0) >= 0.0, 1.0, -1.0)  # sign(0) := +1 (A4), as assign
    signed = vectors * signs
    mass = np.maximum(signed, 0.0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(values > 0.0, n * prior / (values * mass), 0.0)
    coef = signed * factor
    if normalized:
        degree = np.asarray(K.sum(axis=1)).ravel()
        coef = coef / np.sqrt(degree)[:, None]
    search = NearestNeighbors(algorithm=algorithm).fit(X)
    return KernelModel(center, scale, X, sigma, t, coef, normalized, search)


def _exact(Q: FloatArray, X: FloatArray, rows: IndexArray, cols: IndexArray) -> FloatArray:
    # Recomputed as kernel.nearest_neighbors does, so a training point's distances are the same.
    return np.asarray(np.sqrt(((Q[rows] - X[cols]) ** 2).sum(axis=1)), dtype=np.float64)


def _forward(model: KernelModel, Q: FloatArray) -> tuple[IndexArray, FloatArray, FloatArray]:
    """The t nearest training points of every query (a distance-0 match excluded), their
    exact distances, and 1.0 where the query had its own diagonal 1 (no distance-0 match)."""
    t = model.t
    idx = model.search.kneighbors(Q, n_neighbors=t + 1, return_distance=False).astype(np.intp)
    rows = np.repeat(np.arange(Q.shape[0], dtype=np.intp), t + 1)
    dist = _exact(Q, model.X, rows, idx.ravel()).reshape(idx.shape)
    order = np.lexsort((idx, dist), axis=-1)
    idx = np.take_along_axis(idx, order, axis=1)
    dist = np.take_along_axis(dist, order, axis=1)
    matched = dist[:, 0] == 0.0
    first = matched.astype(np.intp)[:, None] + np.arange(t, dtype=np.intp)[None, :]
    own = np.where(matched, 0.0, 1.0)
    return np.take_along_axis(idx, first, axis=1), np.take_along_axis(dist, first, axis=1), own


def kernel_rows(model: KernelModel, Q: FloatArray) -> tuple[sp.csr_matrix, FloatArray]:
    """K(x', x_i) for every standardised query row and training point, and the degree d'."""
    m, n = Q.shape[0], model.X.shape[0]
    fwd_idx, fwd_dist, own = _forward(model, Q)
    sigma_q = fwd_dist[:, -1]
    # x' is among x_j's t nearest neighbours iff |x' - x_j| <= sigma_j (spec Sec. 1.4).
    reach = float(model.sigma.max()) * (1.0 + 1e-9)
    near = model.search.radius_neighbors(Q, radius=reach, return_distance=False)
    rev_rows = np.repeat(np.arange(m, dtype=np.intp), [len(a) for a in near])
    rev_cols = np.concatenate([np.asarray(a, dtype=np.intp) for a in near] + [np.empty(0, np.intp)])
    rows = np.concatenate([np.repeat(np.arange(m, dtype=np.intp), model.t), rev_rows])
    cols = np.concatenate([fwd_idx.ravel(), rev_cols])
    keys = np.unique(rows.astype(np.int64) * n + cols)
    rows, cols = (keys // n).astype(np.intp), (keys % n).astype(np.intp)
    dist = _exact(Q, model.X, rows, cols)
    is_fwd = np.zeros(keys.shape[0], dtype=bool)
    is_fwd[np.searchsorted(keys, np.repeat(np.arange(m), model.t) * n + fwd_idx.ravel())] = True
    keep = is_fwd | (dist <= model.sigma[cols])
    rows, cols, dist = rows[keep], cols[keep], dist[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.exp(-(dist * dist) / (2.0 * sigma_q[rows] * model.sigma[cols]))
    values = np.where(dist == 0.0, 1.0, values)  # exp(0) also when sigma' = 0 (duplicates)
    K = sp.csr_matrix((values, (rows, cols)), shape=(m, n))
    return K, np.asarray(K.sum(axis=1)).ravel() + own


def posterior(model: KernelModel, X: FloatArray) -> FloatArray:
    """Raw n p(y | x') of every row of X (unstandardised), as ``posterior_`` on the fit."""
    Q = (X - model.center) / model.scale
    out = np.empty((Q.shape[0], model.coef.shape[1]))
    for start in range(0, Q.shape[0], CHUNK):
        block = Q[start : start + CHUNK]
        K, degree = kernel_rows(model, block)
        scores = np.maximum(np.asarray(K @ model.coef), 0.0)
        out[start : start + CHUNK] = (
            scores / np.sqrt(degree)[:, None] if model.normalized else scores
        )
    return out
