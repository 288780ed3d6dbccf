"""A data-parallel PPC fit's per-row results, as lazy dask arrays, and ``predict_proba``.

Nothing the size of the data is kept after the fit: ``labels_`` and ``resp_`` are computed
chunk by chunk from the fitted mixture when asked for (the chunk kernel's modes; the
conditioned posteriors), with the related rows' values, from their groups' final E-step,
put in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.engine.arrays import FloatArray, IntArray
from app.engine.core.chunked_input import ChunkedInput, as_rows
from app.engine.ppc.chunked.ppc_tasks import (
    MixtureRule,
    chunk_labels,
    chunk_marginals,
    chunk_proba,
)
from app.engine.ppc.chunked.relation_groups import excluded_per_chunk
from app.engine.ppc.select import family_of


def lazy_labels_and_marginals(
    data: ChunkedInput,
    related: IntArray,
    related_labels: IntArray,
    related_resp: FloatArray,
    rule: MixtureRule,
) -> tuple[Any, Any]:
    """(labels, marginals) of every row as dask arrays; ``related`` the related rows (sorted)
    with their groups' labels and marginals."""
    import dask
    import dask.array as da

    rule_node = dask.delayed(rule, traverse=False)
    label_parts, resp_parts = [], []
    first = 0
    parts = zip(
        data.blocks, data.y_blocks, data.rows, excluded_per_chunk(related, data.rows), strict=True
    )
    for block, y_block, rows, exclude in parts:
        lo = int(np.searchsorted(related, first))
        fixed = slice(lo, lo + exclude.shape[0])
        labels = dask.delayed(chunk_labels)(
            block, y_block, exclude, related_labels[fixed], rule_node
        )
        resp = dask.delayed(chunk_marginals)(
            block, y_block, exclude, related_resp[fixed], rule_node
        )
        label_parts.append(da.from_delayed(labels, shape=(rows,), dtype=np.int64))
        resp_parts.append(
            da.from_delayed(resp, shape=(rows, rule.means.shape[0]), dtype=np.float64)
        )
        first += rows
    return da.concatenate(label_parts), da.concatenate(resp_parts)


def predict_proba_chunked(estimator: Any, X: Any) -> Any:
    """The plain mixture posterior of a dask array's rows, chunk by chunk (lazy)."""
    X = as_rows(X)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but PPC is expecting {estimator.n_features_in_} "
            "features as input"
        )
    family = family_of(estimator.covariance_)[0]
    rule = MixtureRule(
        estimator.weights_, estimator.means_, estimator.precisions_cholesky_, family, 1.0
    )
    return X.map_blocks(
        chunk_proba,
        rule,
        chunks=(X.chunks[0], (estimator.means_.shape[0],)),
        dtype=np.float64,
        meta=np.empty((0, 0), dtype=np.float64),
    )
