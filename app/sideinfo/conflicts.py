"""Conflicts between hard constraints that involve links (two-label conflicts are found while
compiling labels). Each names the annotations that cause it."""

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import ITEMS_PER_CONFLICT, AnnotationRecord, Conflict


class MustLinkIndex:
    """Which hard must-link annotations built each chunklet."""

    def __init__(
        self, chunklets: NDArray[np.int64], pairs: NDArray[np.int64], owners: NDArray[np.int64]
    ) -> None:
        self.chunklets = chunklets
        self.pair_chunks = chunklets[pairs[:, 0]] if len(pairs) else np.empty(0, dtype=np.int64)
        self.owners = owners

    def annotations_of(self, chunk_ids: NDArray[np.int64]) -> list[int]:
        mask = np.isin(self.pair_chunks, chunk_ids)
        return sorted(set(self.owners[mask].tolist()))


def must_link_inside_cannot_link(
    cannot_records: list[AnnotationRecord], must: MustLinkIndex
) -> list[Conflict]:
    conflicts = []
    chunklets = must.chunklets
    for record in cannot_records:
        if not record.is_hard:
            continue
        a = np.asarray(record.payload["items_a"], dtype=np.int64)
        b = np.asarray(record.payload["items_b"], dtype=np.int64)
        shared = np.intersect1d(chunklets[a], chunklets[b])
        if shared.size == 0:
            continue
        items = np.concatenate([a[np.isin(chunklets[a], shared)], b[np.isin(chunklets[b], shared)]])
        causes = must.annotations_of(shared)
        conflicts.append(
            Conflict(
                kind="must_link_in_cannot_link",
                message=(
                    f"cannot-link annotation {record.id} separates items that must-link "
                    f"annotation(s) {', '.join(map(str, causes))} join"
                ),
                annotation_ids=[record.id, *causes],
                items=items[:ITEMS_PER_CONFLICT].tolist(),
            )
        )
    return conflicts


def labels_joined_by_must_link(
    labels: NDArray[np.int32],
    label_names: list[str],
    label_owner: NDArray[np.int64],
    must: MustLinkIndex,
) -> list[Conflict]:
    labeled = np.flatnonzero(labels >= 0)
    if labeled.size == 0 or must.pair_chunks.size == 0:
        return []
    chunk = must.chunklets[labeled]
    pairs = np.unique(np.column_stack([chunk, labels[labeled]]), axis=0)
    chunk_ids, counts = np.unique(pairs[:, 0], return_counts=True)
    conflicts = []
    for chunk_id in chunk_ids[counts > 1].tolist():
        items = labeled[chunk == chunk_id]
        names = sorted({label_names[c] for c in labels[items].tolist()})
        causes = must.annotations_of(np.array([chunk_id]))
        label_sources = sorted(set(label_owner[items].tolist()))
        conflicts.append(
            Conflict(
                kind="labels_joined_by_must_link",
                message=(
                    f"must-link annotation(s) {', '.join(map(str, causes))} join items labeled "
                    + " and ".join(repr(n) for n in names)
                ),
                annotation_ids=[*causes, *label_sources],
                items=items[:ITEMS_PER_CONFLICT].tolist(),
            )
        )
    return conflicts
