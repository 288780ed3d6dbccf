"""Conflicts between hard constraints that involve must-links (two-label conflicts are found
while compiling labels). Each names the annotations that cause it. Grouping is done by sorting,
so a report over a million items and many annotations stays fast."""

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import ITEMS_PER_CONFLICT, AnnotationRecord, Conflict

# A conflict inside a chunklet of thousands of must-links names a few of them (the message says
# how many in all) and carries a bounded list of ids (the page lists them to undo or edit).
ANNOTATIONS_NAMED = 10
ANNOTATIONS_PER_CONFLICT = 100


class MustLinkIndex:
    """Which hard must-link annotations built each chunklet."""

    def __init__(
        self, chunklets: NDArray[np.int64], pairs: NDArray[np.int64], owners: NDArray[np.int64]
    ) -> None:
        self.chunklets = chunklets
        pair_chunks = chunklets[pairs[:, 0]] if len(pairs) else np.empty(0, dtype=np.int64)
        order = np.argsort(pair_chunks, kind="stable")
        self.sorted_chunks = pair_chunks[order]
        self.sorted_owners = owners[order] if len(owners) else np.empty(0, dtype=np.int64)
        self._owners_of: dict[tuple[int, ...], list[int]] = {}

    @property
    def empty(self) -> bool:
        return self.sorted_chunks.size == 0

    def annotations_of(self, chunk_ids: NDArray[np.int64]) -> list[int]:
        """The must-link annotations that built these chunklets, in id order. Remembered per
        set of chunklets: many conflicts share one large chunklet (tens of thousands of links),
        and collecting its annotations once per conflict made a report quadratic."""
        key = tuple(np.unique(chunk_ids).tolist())
        if key not in self._owners_of:
            lo = np.searchsorted(self.sorted_chunks, key, side="left")
            hi = np.searchsorted(self.sorted_chunks, key, side="right")
            owners = [self.sorted_owners[a:b] for a, b in zip(lo, hi, strict=True)]
            found = np.unique(np.concatenate(owners)) if owners else np.empty(0, np.int64)
            self._owners_of[key] = found.tolist()
        return self._owners_of[key]


def named(ids: list[int]) -> str:
    """Annotation ids for a message: all of a few, the first ANNOTATIONS_NAMED of many."""
    if len(ids) <= ANNOTATIONS_NAMED:
        return ", ".join(map(str, ids))
    shown = ", ".join(map(str, ids[:ANNOTATIONS_NAMED]))
    return f"{shown} and {len(ids) - ANNOTATIONS_NAMED} more"


def must_link_inside_cannot_link(
    cannot_records: Mapping[int, AnnotationRecord],
    cannot_pairs: NDArray[np.int64],
    cannot_confidence: NDArray[np.float64],
    cannot_owners: NDArray[np.int64],
    sampled: set[int],
    must: MustLinkIndex,
    limit: int,
) -> tuple[list[Conflict], int]:
    """A hard cannot-link whose two sides share a chunklet. Checked on the expanded pairs, and
    on the whole sets for the few cannot-links whose pairs were sampled. `cannot_records` maps
    each cannot-link annotation's id to its record."""
    if must.empty:
        return [], 0
    chunklets = must.chunklets
    same = chunklets[cannot_pairs[:, 0]] == chunklets[cannot_pairs[:, 1]]
    same &= cannot_confidence >= 1.0
    offenders = set(np.unique(cannot_owners[same]).tolist())
    offenders |= {
        rid
        for rid in sampled
        if cannot_records[rid].is_hard
        and np.intersect1d(
            chunklets[np.asarray(cannot_records[rid].payload["items_a"])],
            chunklets[np.asarray(cannot_records[rid].payload["items_b"])],
        ).size
    }
    conflicts = []
    for record_id in sorted(offenders)[:limit]:
        record = cannot_records[record_id]
        a = np.asarray(record.payload["items_a"], dtype=np.int64)
        b = np.asarray(record.payload["items_b"], dtype=np.int64)
        shared = np.intersect1d(chunklets[a], chunklets[b])
        items = np.concatenate([a[np.isin(chunklets[a], shared)], b[np.isin(chunklets[b], shared)]])
        causes = must.annotations_of(shared)
        conflicts.append(
            Conflict(
                kind="must_link_in_cannot_link",
                message=(
                    f"cannot-link annotation {record.id} separates items that must-link "
                    f"annotation(s) {named(causes)} join"
                ),
                annotation_ids=[record.id, *causes[:ANNOTATIONS_PER_CONFLICT]],
                items=items[:ITEMS_PER_CONFLICT].tolist(),
            )
        )
    return conflicts, len(offenders)


def labels_joined_by_must_link(
    labels: NDArray[np.int32],
    label_names: list[str],
    label_owner: NDArray[np.int64],
    must: MustLinkIndex,
    limit: int,
) -> tuple[list[Conflict], int]:
    labeled = np.flatnonzero(labels >= 0)
    if labeled.size == 0 or must.empty:
        return [], 0
    order = np.argsort(must.chunklets[labeled], kind="stable")
    items = labeled[order]
    chunks = must.chunklets[items]
    values = labels[items]
    starts = np.flatnonzero(np.r_[True, chunks[1:] != chunks[:-1]])
    mixed = np.minimum.reduceat(values, starts) != np.maximum.reduceat(values, starts)
    ends = np.r_[starts[1:], len(items)]
    conflicts = []
    for start, end in zip(starts[mixed][:limit], ends[mixed][:limit], strict=True):
        group = items[start:end]
        names = sorted({label_names[c] for c in labels[group].tolist()})
        causes = must.annotations_of(chunks[start : start + 1])
        label_sources = sorted(set(label_owner[group].tolist()))
        conflicts.append(
            Conflict(
                kind="labels_joined_by_must_link",
                message=(
                    f"must-link annotation(s) {named(causes)} join items labeled "
                    + " and ".join(repr(n) for n in names)
                ),
                annotation_ids=[
                    *causes[:ANNOTATIONS_PER_CONFLICT],
                    *label_sources[:ANNOTATIONS_PER_CONFLICT],
                ],
                items=group[:ITEMS_PER_CONFLICT].tolist(),
            )
        )
    return conflicts, int(mixed.sum())
