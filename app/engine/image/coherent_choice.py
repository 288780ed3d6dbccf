"""Choosing between fits of one method by the spatial coherence of their segmentations.

On an image the scribbles rarely decide between two label-consistent fits: both keep every
scribbled pixel in its own cluster, and they differ in where the unscribbled pixels go. What
does decide is the image prior every segmentation tool relies on: true segments are mostly
contiguous. ``MostCoherentFit`` fits each candidate estimator and measures its **stray items**:
the items whose label differs from the label across more than half of their links (weight of
the 4-neighbour pixel links, or of touching superpixels' shared borders), the isolated specks a
misfit leaves. The first candidate is the preferred model; a later one replaces the kept one
only when it has at least ``margin`` (default 20 %) fewer stray items, because a small
difference is noise, not evidence.

Why stray items and not the share of disagreeing links (the rule until 2026-11-25): a shorter
boundary also means fewer disagreeing links, so that share favoured a fit that shrinks a
region. On the API test's disc scribbled with one short stroke through its centre, diagonal
covariances shrank the disc to the stroke's surroundings (0.56 mIoU, 44 % fewer disagreeing
links than full's 0.88); both leave almost no stray pixels, and the tie keeps full.

Why the CEC family needs a choice (benchmarks/bench_image.py, CEC-IB with the scribbles as
labels counted 10 times; 3 draws per task): on noisy shapes full covariances let the broad
background be shared out among the clusters of small shapes (0.44-0.66 mIoU, 0.08-0.11 % stray
pixels) where diagonal ones segment it (0.94-0.95, 0.01-0.02 %); on brick and grass textures
it is the other way round (full 0.65-0.81 with 0.01-0.04 % stray, diagonal 0.41-0.68 with
0.02-0.11 %). Over the 15 draws of the five tasks the rule kept the better fit, or one within
0.03 mIoU of it, every time.

Progress: the candidates are usually built with one run's ``progress(iteration, energy)``
callback, and fitted at once they would report into it in turn, each with its own sweep count
(the run's bar went 4 %, 6 %, 5 %, 7 %, 6 %). While fitting, ``MostCoherentFit`` gives each
candidate a relay instead: the callback sees the candidates' sweep counts averaged, so each of
``m`` candidates fills its own ``1/m`` of the bar (one fit's scale, as the progress line's budget
assumes), in parallel or one after another, and the count never goes back. The first answer
False (cancel) is passed on, and every candidate's next sweep then gets False too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.engine.core.cec_fit import ASK_ONLY
from app.engine.core.daemon_pool import DaemonPool
from app.engine.progress import Progress


def stray_fraction(labels: ArrayLike, pairs: ArrayLike, weights: ArrayLike) -> float:
    """The fraction of items whose links to differently labeled items weigh more than half of
    all their links (items without links count as not stray; 0 without items)."""
    flat = np.asarray(labels).ravel()
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if pairs.shape[0] != weights.shape[0]:
        raise ValueError(f"{pairs.shape[0]} pairs but {weights.shape[0]} weights")
    n = flat.shape[0]
    if n == 0:
        return 0.0
    differs = np.where(flat[pairs[:, 0]] != flat[pairs[:, 1]], weights, 0.0)
    ends = pairs.T.ravel()
    total = np.bincount(ends, np.tile(weights, 2), minlength=n)
    against = np.bincount(ends, np.tile(differs, 2), minlength=n)
    return float(np.count_nonzero(against > 0.5 * total) / n)


def most_coherent(
    labelings: Sequence[ArrayLike],
    pairs: ArrayLike,
    weights: ArrayLike,
    margin: float = 0.2,
) -> tuple[int, list[float]]:
    """Index of the labeling to keep and every labeling's stray fraction: the first, unless a
    later one has at least ``margin`` fewer stray items than the one kept so far."""
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
    scores = [stray_fraction(labels, pairs, weights) for labels in labelings]
    if not scores:
        raise ValueError("most_coherent needs at least one labeling")
    best = 0
    for index, score in enumerate(scores):
        if score < (1.0 - margin) * scores[best]:
            best = index
    return best, scores


class SharedProgress:
    """One ``progress`` callback that ``n`` fits report into (module docstring): fit ``j``
    reports through ``relay(j)``; the callback gets the mean of the fits' sweep counts (never
    less than before) and is called under a lock, so in the order of those counts."""

    def __init__(self, progress: Progress, n: int) -> None:
        if n < 1:
            raise ValueError(f"SharedProgress needs at least one fit, got {n!r}")
        self.progress = progress
        self.sweeps = [0] * n
        self.stopped = False
        self._lock = threading.Lock()

    def relay(self, slot: int) -> Progress:
        def report(iteration: int, energy: float) -> object:
            with self._lock:
                if self.stopped:  # told to stop through another fit
                    return False
                if iteration == ASK_ONLY:  # a question, not a sweep: passed on as it is
                    answer = self.progress(ASK_ONLY, energy)
                else:
                    self.sweeps[slot] = max(self.sweeps[slot], int(iteration))
                    answer = self.progress(sum(self.sweeps) // len(self.sweeps), energy)
                if answer is not None and not answer:
                    self.stopped = True
                return answer

        return report


@contextmanager
def shared_progress(estimators: Sequence[Any]) -> Iterator[None]:
    """While in the block, estimators that share a ``progress`` callback report into it
    through one ``SharedProgress``; their own callbacks are put back afterwards."""
    originals: dict[int, Progress] = {}
    groups: dict[int, list[int]] = {}  # by the callback's identity (each is held in originals)
    for index, estimator in enumerate(estimators):
        progress = getattr(estimator, "progress", None)
        if callable(progress):
            originals[index] = progress
            groups.setdefault(id(progress), []).append(index)
    try:
        for group in groups.values():
            shared = SharedProgress(originals[group[0]], len(group))
            for slot, index in enumerate(group):
                estimators[index].progress = shared.relay(slot)
        yield
    finally:
        for index, progress in originals.items():
            estimators[index].progress = progress


class MostCoherentFit:
    """Fit every candidate on the same data and keep the most coherent (see the module).

    ``names`` describe the candidates (e.g. their covariance families). ``n_jobs`` candidates
    are fitted at once, in threads (default: as many as there are candidates and CPUs): the CEC
    kernels release the GIL, so on 2 cores a scribble-and-run wait is about halved. Each
    candidate has its own state and seed, so the result does not depend on ``n_jobs``.
    Candidates sharing a ``progress`` callback report into it as one fit (module docstring).
    Fitted attributes:
    ``best_estimator_`` (the kept candidate, fitted), ``labels_`` (its labels), ``choice_``
    (the kept name and every candidate's stray fraction, for the run's metrics).
    """

    def __init__(
        self,
        candidates: Sequence[Any],
        names: Sequence[str],
        pairs: NDArray[np.int64],
        weights: NDArray[np.float64],
        margin: float = 0.2,
        n_jobs: int | None = None,
    ) -> None:
        if n_jobs is not None and n_jobs < 1:
            raise ValueError(f"n_jobs must be a positive number or None, got {n_jobs!r}")
        if not candidates or len(candidates) != len(names):
            raise ValueError("MostCoherentFit needs one name per candidate, and a candidate")
        if not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be in [0, 1), got {margin!r}")
        self.margin = margin
        self.candidates = list(candidates)
        self.names = list(names)
        self.pairs = pairs
        self.weights = weights
        self.n_jobs = n_jobs

    def fit(self, x: ArrayLike, *args: Any, **kwargs: Any) -> MostCoherentFit:
        workers = self.n_jobs or min(len(self.candidates), os.cpu_count() or 1)
        with shared_progress(self.candidates):
            if workers == 1:
                for candidate in self.candidates:
                    candidate.fit(x, *args, **kwargs)
            else:
                with DaemonPool(workers, "candidates") as pool:
                    fits = [pool.submit(c.fit, x, *args, **kwargs) for c in self.candidates]
                    for done in fits:
                        done.result()  # re-raises a candidate's error here
        index, scores = most_coherent(
            [c.labels_ for c in self.candidates], self.pairs, self.weights, self.margin
        )
        self.best_estimator_ = self.candidates[index]
        self.labels_ = self.best_estimator_.labels_
        self.choice_ = {
            "chosen": self.names[index],
            "stray_fraction": dict(zip(self.names, scores, strict=True)),
        }
        return self
