"""A data-parallel run's result, made where its labels are.

At 20M items the labels alone are 80 MB, and measuring them whole (ARI and NMI sort copies of
them) took a 1 GiB worker past its limit after the fit had succeeded. Here nothing of size n
reaches the run's task: the fitted labels stay on the workers (persisted once, not replayed per
use); each chunk task counts its items per (cluster, class), (cluster, label) and (cluster,
earlier run's number) cell, reading the ground truth and the earlier run's labels from the store
itself, and returns its clusters at the few items the pairwise constraints name; the run adds the
tables and reads every measure from the sums (`engine.core.contingency`); the workers then write
the renumbered labels chunk by chunk. What the run holds is tables of clusters by classes, the
labeled items and the pairs: what the expert gave, not what the data has.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.engine.arrays import IntArray
from app.engine.core.contingency import (
    Table,
    ari_from_contingency,
    contingency,
    nmi_from_contingency,
    padded_sum,
)
from app.engine.core.metrics import ConstraintSatisfaction, label_satisfaction_from_contingency
from app.engine.core.numbering import numbering_from_overlap
from app.jobs.results.latest_run import latest_fitted
from app.jobs.run.data_parallel import ROWS_PER_TASK
from app.jobs.run.numbering import extended
from app.sideinfo import SideInformation
from app.store.dataset_arrays import chunked_ground_truth
from app.store.run_arrays import labels_dask


@dataclass(frozen=True)
class LazyReference:
    """The run a data-parallel run's clusters are numbered like, its labels left in the store."""

    run_id: int
    labels: Any  # a lazy dask array


@dataclass(frozen=True)
class ChunkedInputs:
    """What the result reads besides the labels, chunk by chunk."""

    truth: Any  # the ground truth as a lazy dask array, or None
    reference: LazyReference | None


def chunked_inputs(session: Session, run: Run, dataset: Dataset) -> ChunkedInputs:
    truth = chunked_ground_truth(session=session, dataset=dataset, rows_per_task=ROWS_PER_TASK)
    row = latest_fitted(session, run)
    reference = None
    if row is not None:
        stored = labels_dask(session=session, run_id=int(row[0]), rows_per_task=ROWS_PER_TASK)
        if stored is not None and stored.shape[0] == dataset.n_items:
            reference = LazyReference(int(row[0]), stored)
    return ChunkedInputs(truth, reference)


@dataclass(frozen=True)
class ChunkCounts:
    """One chunk's share of the result."""

    sizes: NDArray[np.int64]  # items per cluster
    truth: Table | None  # cluster x class, items with a known class
    labeled: Table | None  # cluster x label, the labeled items
    reference: Table | None  # cluster x the earlier run's number
    at_asked: NDArray[np.int32]  # the clusters of the asked items


def count_chunk(
    labels: NDArray[np.integer],
    truth: NDArray[np.integer] | None,
    labeled: tuple[NDArray[np.int32], NDArray[np.integer]] | None,
    reference: NDArray[np.integer] | None,
    asked: NDArray[np.int64],
) -> ChunkCounts:
    """A chunk task: ``labeled`` and ``asked`` are positions within the chunk."""
    labels = np.asarray(labels)
    k = int(labels.max(initial=-1)) + 1

    def table(columns: NDArray[np.integer]) -> Table:
        return contingency(labels, columns, (k, int(np.max(columns, initial=-1)) + 1))

    labeled_table = None
    if labeled is not None:
        items, values = labeled
        width = int(values.max(initial=-1)) + 1
        labeled_table = contingency(labels[items], values, (k, width))
    return ChunkCounts(
        sizes=np.bincount(labels[labels >= 0], minlength=k).astype(np.int64),
        truth=None if truth is None else table(np.asarray(truth)),
        labeled=labeled_table,
        reference=None if reference is None else table(np.asarray(reference)),
        at_asked=labels[asked].astype(np.int32),
    )


@dataclass(frozen=True)
class ChunkedResult:
    labels: Any  # renumbered, lazy: written by the workers
    metrics: dict[str, Any]
    order: IntArray | None  # the renumbering (fitted cluster c is stored as order[c])


def chunked_result(labels: Any, info: SideInformation, inputs: ChunkedInputs) -> ChunkedResult:
    """Count every chunk (on the scheduler ``dask.compute`` uses here), renumber like the
    reference run, and measure; ``labels`` is the fit's lazy ``labels_``."""
    import dask

    labels = labels.persist()  # the kept pass replayed once, then held by the workers
    rows = [int(r) for r in labels.chunks[0]]
    bounds = np.cumsum([0, *rows])
    blocks = labels.to_delayed().ravel()
    truth = _aligned(inputs.truth, labels)
    reference = _aligned(inputs.reference.labels if inputs.reference else None, labels)
    labeled_items = np.flatnonzero(info.labels >= 0)
    asked = np.unique(np.concatenate([info.must_link.ravel(), info.cannot_link.ravel()]))
    tasks = []
    for index, block in enumerate(blocks):
        start, stop = int(bounds[index]), int(bounds[index + 1])
        chunk_labeled = None
        if info.label_names:  # positions in the chunk and label codes, in 6 bytes an item
            items = _within(labeled_items, start, stop)
            codes = info.labels[items]
            chunk_labeled = (
                (items - start).astype(np.int32),
                codes.astype(np.int16 if len(info.label_names) < 2**15 else np.int32),
            )
        tasks.append(
            dask.delayed(count_chunk)(
                block,
                None if truth is None else truth[index],
                chunk_labeled,
                None if reference is None else reference[index],
                _within(asked, start, stop) - start,
            )
        )
    counts: list[ChunkCounts] = list(dask.compute(*tasks))
    k = max(len(c.sizes) for c in counts) if counts else 0
    order = None
    if inputs.reference is not None and k:
        overlap = _square(padded_sum([c.reference for c in counts if c.reference is not None]), k)
        order = numbering_from_overlap(overlap)
    metrics = _metrics(counts, k, order, info, asked)
    if order is not None:
        full = extended(order, k)
        labels = labels.map_blocks(_renumbered_block, full, dtype=np.int32)
    else:
        labels = labels.astype(np.int32)
    return ChunkedResult(labels, metrics, order)


def _within(sorted_items: NDArray[np.int64], start: int, stop: int) -> NDArray[np.int64]:
    lo, hi = np.searchsorted(sorted_items, [start, stop])
    return sorted_items[lo:hi].astype(np.int64)


def _aligned(array: Any, labels: Any) -> list[Any] | None:
    """``array``'s tasks cut like ``labels``'s chunks, one per chunk."""
    if array is None:
        return None
    if array.chunks[0] != labels.chunks[0]:
        array = array.rechunk((labels.chunks[0],))
    return list(array.to_delayed().ravel())


def _square(table: Table, k: int) -> Table:
    """The (k x k) corner: only numbers 0..k-1 can be given, so only those are matched."""
    out = np.zeros((k, k), dtype=np.int64)
    rows, columns = min(k, table.shape[0]), min(k, table.shape[1])
    out[:rows, :columns] = table[:rows, :columns]
    return out


def _renumbered_block(block: NDArray[np.integer], full: IntArray) -> NDArray[np.int32]:
    return np.where(block >= 0, full[np.maximum(block, 0)], block).astype(np.int32)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _rates(rates: ConstraintSatisfaction) -> dict[str, float | None]:
    return {key: _finite(value) for key, value in asdict(rates).items()}


def _metrics(
    counts: list[ChunkCounts],
    k: int,
    order: IntArray | None,
    info: SideInformation,
    asked: NDArray[np.int64],
) -> dict[str, Any]:
    """`metrics.run_metrics`'s measures from the summed counts, clusters under their new
    numbers."""
    sizes = np.zeros(k, dtype=np.int64)
    for c in counts:
        sizes[: len(c.sizes)] += c.sizes
    new = extended(order, k) if order is not None else np.arange(k)
    by_number = np.zeros(k, dtype=np.int64)
    by_number[new] = sizes
    # As a bincount of the stored labels: up to the highest number in use.
    used = np.flatnonzero(by_number)
    k = int(used[-1]) + 1 if used.size else 0
    by_number = by_number[:k]
    metrics: dict[str, Any] = {
        "n_clusters": int(np.count_nonzero(by_number)),
        "cluster_sizes": by_number.tolist(),
    }
    if len(info.must_link) or len(info.cannot_link):
        metrics["pair_constraints"] = _pair_rates(counts, asked, info)
    labeled = [c.labeled for c in counts if c.labeled is not None]
    table = padded_sum(labeled) if labeled else np.zeros((0, 0), dtype=np.int64)
    if info.n_labeled:
        metrics["label_pairs"] = _rates(label_satisfaction_from_contingency(table))
        metrics["label_purity"] = float(table.max(axis=1).sum() / table.sum())
    metrics["cluster_labels"] = _cluster_labels(table, new, k, info.label_names)
    truths = [c.truth for c in counts if c.truth is not None]
    if truths:
        truth = padded_sum(truths)
        metrics["ari"] = ari_from_contingency(truth)
        metrics["nmi"] = nmi_from_contingency(truth)
    return metrics


def _pair_rates(
    counts: list[ChunkCounts], asked: NDArray[np.int64], info: SideInformation
) -> dict[str, float | None]:
    from app.engine import pairwise_constraint_satisfaction

    at = np.concatenate([c.at_asked for c in counts]) if counts else np.zeros(0, np.int32)

    def local(pairs: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.searchsorted(asked, pairs).reshape(-1, 2)

    rates = pairwise_constraint_satisfaction(at, local(info.must_link), local(info.cannot_link))
    return _rates(rates)


def _cluster_labels(table: Table, new: IntArray, k: int, names: list[str]) -> list[str | None]:
    """Per cluster number, the label most of its labeled items carry (None: none)."""
    out: list[str | None] = [None] * k
    if not names:
        return out
    for cluster in range(table.shape[0]):
        row = table[cluster]
        if row.any() and new[cluster] < k:
            out[int(new[cluster])] = names[int(row.argmax())]
    return out
