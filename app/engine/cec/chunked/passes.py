"""Data-parallel CEC / CEC-IB: passes of classification EM over chunks, then chunk polishing.

A pass freezes the clusters' parameters, lets every chunk place its items at their cheapest
cluster (``chunk_kernels.assign_chunk``) and sums per cluster the weight, the sum and the
scatter (``cluster_totals.Totals``); the driver recomputes the parameters from the totals.
Without labels this never raises the energy: the frozen parameters' cost of the new partition
is at most that of the old one, and re-estimating them lowers it to the new partition's energy
(the CEC paper's Lloyd step). With labels the label term's frozen form is an approximation, so
a pass that would raise the energy is not taken: the fit ends at the partition before it. A
pass after which a cluster holds less than the minimum drops that cluster, as the sequential
engine does; the energy is compared across passes with the same clusters.

Polishing: once the passes settle, every chunk runs Hartigan moves of its own items against
the global statistics (each chunk as if it alone moved); the sum of all chunks' moves is kept
only when it lowers the energy. Sequential Hartigan moves one point at a time against exact
statistics, so the two can end in different local minima (docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.engine.arrays import BoolArray, IntArray
from app.engine.cec.chunked.chunk_tasks import ChunkRule, Polish, labels_chunk, pass_chunk
from app.engine.cec.chunked.cluster_totals import (
    Frozen,
    Totals,
    energy,
    family_entropies,
    freeze,
    polish_state,
)
from app.engine.core.chunked_input import ChunkedInput
from app.engine.progress import Progress, asks_to_stop

# A pass that lowers the energy by less than this share of it ends the passes.
CONVERGED_RTOL = 1e-7
# A pass may raise the energy by rounding only (sums of millions of terms).
RISE_RTOL = 1e-10
POLISH_PASSES = 2


@dataclass(frozen=True)
class PassSettings:
    family: int
    beta: float
    labeled_weight: float
    n_total: float  # unlabeled rows + labeled_weight * labeled rows
    min_size: float
    max_iter: int
    polish: bool
    projection: Any = None


@dataclass
class ChunkedFit:
    rule: ChunkRule  # replays the kept partition on any chunk
    totals: Totals
    alive: BoolArray
    energy: float
    history: list[float] = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    cancelled: bool = False
    polished: bool = False

    def kept(self) -> BoolArray:
        return self.alive & (self.totals.count > 0)


def run_pass(data: ChunkedInput, rule: ChunkRule, labeled_weight: float) -> Totals:
    """One pass over every chunk; the totals are added in chunk order (reproducible)."""
    import dask

    rule_node = dask.delayed(rule, traverse=False)
    tasks = [
        dask.delayed(pass_chunk)(block, y_block, data.classes, rule_node, labeled_weight)
        for block, y_block in zip(data.blocks, data.y_blocks, strict=True)
    ]
    parts = dask.compute(*tasks)
    total = Totals.zeros(rule.frozen.means, data.classes.shape[0])
    for part in parts:
        total.add(part)
    return total


def _next_frozen(
    totals: Totals, alive: BoolArray, settings: PassSettings
) -> tuple[Frozen, BoolArray]:
    """The parameters of the partition ``totals`` describes, without the clusters under the
    minimum (the largest one always stays)."""
    means, cov = totals.moments()
    keep = alive & (totals.count >= settings.min_size)
    keep &= np.isfinite(family_entropies(settings.family, cov, keep))
    if not keep.any():
        keep[int(np.argmax(totals.count))] = True
    frozen = freeze(
        totals.count / settings.n_total,
        means,
        cov,
        keep,
        totals.label_counts,
        totals.count,
        settings.family,
        settings.beta,
    )
    return frozen, frozen.alive


def fit_passes(
    data: ChunkedInput, start: Frozen, settings: PassSettings, progress: Progress | None
) -> ChunkedFit:
    """Passes from ``start`` until the energy settles, ``max_iter`` passes, or ``progress``
    returns False (cancel: the last kept partition stays, consistent)."""
    rule = ChunkRule(start, None, settings.projection)
    totals = run_pass(data, rule, settings.labeled_weight)
    value = energy(totals, start.alive, settings.family, settings.beta, settings.n_total)
    fit = ChunkedFit(rule, totals, start.alive, value, [value], n_iter=1)
    if _cancelled(progress, fit):
        return fit
    while fit.n_iter < settings.max_iter:
        frozen, alive = _next_frozen(fit.totals, fit.alive, settings)
        same_clusters = bool(np.array_equal(alive, fit.kept()))
        rule = ChunkRule(frozen, None, settings.projection)
        totals = run_pass(data, rule, settings.labeled_weight)
        value = energy(totals, alive, settings.family, settings.beta, settings.n_total)
        fit.n_iter += 1
        if same_clusters and value > fit.energy + RISE_RTOL * abs(fit.energy):
            fit.converged = True  # the labels' frozen cost misled this pass: keep the last
            break
        previous = fit.energy
        fit.rule, fit.totals, fit.alive, fit.energy = rule, totals, alive, value
        fit.history.append(value)
        if _cancelled(progress, fit):
            return fit
        if same_clusters and previous - value <= CONVERGED_RTOL * abs(value):
            fit.converged = True
            break
    if settings.polish and not fit.cancelled:
        _polish(data, fit, settings, progress)
    return fit


def _polish(
    data: ChunkedInput, fit: ChunkedFit, settings: PassSettings, progress: Progress | None
) -> None:
    for _ in range(POLISH_PASSES):  # beyond max_iter, which caps the passes before
        frozen, alive = _next_frozen(fit.totals, fit.alive, settings)
        if not np.array_equal(alive, fit.kept()):
            return  # a cluster would be dropped: the passes, not polishing, should do that
        state = polish_state(fit.totals, alive, settings.family, settings.beta, settings.n_total)
        polish = Polish(
            state,
            settings.family,
            settings.n_total,
            settings.beta,
            settings.min_size,
            move_labeled=settings.labeled_weight == 1.0,
        )
        rule = ChunkRule(frozen, polish, settings.projection)
        totals = run_pass(data, rule, settings.labeled_weight)
        value = energy(totals, alive, settings.family, settings.beta, settings.n_total)
        fit.n_iter += 1
        if not value < fit.energy - RISE_RTOL * abs(fit.energy):
            return
        fit.rule, fit.totals, fit.alive, fit.energy = rule, totals, alive, value
        fit.history.append(value)
        fit.polished = True
        if _cancelled(progress, fit):
            return


def _cancelled(progress: Progress | None, fit: ChunkedFit) -> bool:
    if asks_to_stop(progress, fit.n_iter, fit.energy):
        fit.cancelled = True
    return fit.cancelled


def fitted_labels(data: ChunkedInput, fit: ChunkedFit) -> tuple[Any, IntArray]:
    """The kept partition as a lazy dask array of cluster ids 0..k'-1 (kept clusters in slot
    order), and the slot of each id."""
    import dask
    import dask.array as da

    slots = np.flatnonzero(fit.kept())
    relabel = np.full(fit.alive.shape[0], -1, dtype=np.int64)
    relabel[slots] = np.arange(slots.shape[0])
    rule_node = dask.delayed(fit.rule, traverse=False)
    parts = [
        da.from_delayed(
            dask.delayed(labels_chunk)(block, y_block, data.classes, rule_node, relabel),
            shape=(rows,),
            dtype=np.int64,
        )
        for block, y_block, rows in zip(data.blocks, data.y_blocks, data.rows, strict=True)
    ]
    return da.concatenate(parts), slots
