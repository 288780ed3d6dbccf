"""LSMI's cross-validation kernel: the mean hold-out error of every (gamma, delta) in one pass.

Spec smic.md Sec. 3.4 (pseudo-code `LSMI`, with its optional speed-up: one eigendecomposition of
H_tr per class, fold and gamma serves every delta). Everything here is label-free except the
class of each centre and the per-(fold, class) sums and counts, so the caller hands in cached
Grams and this loop does the rest. It is compiled because the work per step is tiny (digits: about
20 x 20 blocks, 450 of them per labelling) and numpy's per-call overhead was half of LSMI's time.
"""

from __future__ import annotations

import numba
import numpy as np

from app.engine.arrays import FloatArray, IndexArray


@numba.njit(nogil=True, cache=True)
def holdout_errors(
    grams: FloatArray,
    sums: FloatArray,
    counts: FloatArray,
    fold_sizes: FloatArray,
    centre_order: IndexArray,
    class_starts: IndexArray,
    class_ids: IndexArray,
    deltas: FloatArray,
) -> FloatArray:
    """(G, D) hold-out error of eq. 14 without its constant, averaged over the M folds.

    grams: (G, M, b, b), sum over the fold's samples of L_i L_i^T. sums: (G, M, labels, b), sum
    of L_i over the fold's samples of each label. counts: (M, labels) samples per fold and label.
    The centres of class class_ids[k] are centre_order[class_starts[k]:class_starts[k + 1]].
    Training statistics are all-fold totals minus the fold's (Sec. 3.4).
    """
    n_gammas, n_folds = grams.shape[0], grams.shape[1]
    n = fold_sizes.sum()
    errors = np.zeros((n_gammas, deltas.size))
    for g in range(n_gammas):
        gram_all = grams[g].sum(axis=0)
        sum_all = sums[g].sum(axis=0)
        for k in range(class_ids.size):
            y = class_ids[k]
            cols = centre_order[class_starts[k] : class_starts[k + 1]]
            block_all = gram_all[cols][:, cols]
            count_all = counts[:, y].sum()
            for m in range(n_folds):
                n_te = fold_sizes[m]
                n_tr = n - n_te
                block_te = grams[g, m][cols][:, cols]
                sum_te = sums[g, m, y][cols]
                # eigh of the block divided by its largest entry: with small gamma a Gram holds
                # entries down to 1e-323 beside ones near 1e-3, and LAPACK failed to converge on
                # such a finite, exactly symmetric 81 x 81 block of the circle toy set; it does
                # converge on the rescaled block. An all-zero block stays zero.
                A = block_all - block_te
                scale = np.abs(A).max()
                if scale == 0.0:
                    scale = 1.0
                w, V = np.linalg.eigh(A / scale)
                w = w * (scale * (count_all - counts[m, y]) / n_tr**2)
                proj = V.T @ ((sum_all[y][cols] - sum_te) / n_tr)
                H_te = (counts[m, y] / n_te**2) * block_te
                h_te = sum_te / n_te
                for d in range(deltas.size):
                    theta = V @ (proj / (w + deltas[d]))
                    err = 0.5 * (theta @ (H_te @ theta)) - h_te @ theta
                    errors[g, d] += err / n_folds
    return errors
