"""Partial labels from label annotations; a later annotation's label wins, and an item given
two different labels is reported as a conflict naming both annotations. An erasing record
(`{"items", "erase": true}`, from an eraser scribble) unlabels its items: labels given before it
neither hold nor clash with later ones."""

import itertools

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import (
    ITEMS_PER_CONFLICT,
    AnnotationRecord,
    Conflict,
)


def compile_labels(
    n_items: int, records: list[AnnotationRecord]
) -> tuple[NDArray[np.int32], list[str], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Labels per item (-1 unlabeled), label names, the annotation that set each label (-1 for
    none), and the clashes: (earlier, later) annotation id pairs with the item of each."""
    names = sorted({str(r.payload["label"]) for r in records if not r.payload.get("erase")})
    labels = np.full(n_items, -1, dtype=np.int32)
    owner = np.full(n_items, -1, dtype=np.int64)
    if not records:
        return labels, names, owner, np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    code_of = {name: code for code, name in enumerate(names)}
    sizes = np.fromiter((len(r.payload["items"]) for r in records), dtype=np.int64)
    items = np.fromiter(
        itertools.chain.from_iterable(r.payload["items"] for r in records),
        dtype=np.int64,
        count=int(sizes.sum()),
    )
    record_index = np.repeat(np.arange(len(records)), sizes)
    record_codes = np.array(
        [-1 if r.payload.get("erase") else code_of[str(r.payload["label"])] for r in records],
        dtype=np.int32,
    )
    ids = np.array([r.id for r in records], dtype=np.int64)

    # The newest annotation touching an item decides its label (records are in creation order).
    newest = np.full(n_items, -1, dtype=np.int64)
    np.maximum.at(newest, items, record_index)
    touched = newest >= 0
    labels[touched] = record_codes[newest[touched]]
    owner[touched] = np.where(labels[touched] >= 0, ids[newest[touched]], -1)

    # Only labels given after an item's last erasure still hold on it, so only they can clash.
    last_erase = np.full(n_items, -1, dtype=np.int64)
    erasing = record_codes[record_index] < 0
    np.maximum.at(last_erase, items[erasing], record_index[erasing])
    live = ~erasing & (record_index > last_erase[items])
    clash = live & (record_codes[record_index] != labels[items])
    pairs = np.column_stack([ids[record_index[clash]], owner[items[clash]]])
    # A label erased everywhere is no longer a category.
    used = np.unique(labels[labels >= 0])
    if len(used) < len(names):
        recode = np.full(len(names), -1, dtype=np.int32)
        recode[used] = np.arange(len(used), dtype=np.int32)
        labels[labels >= 0] = recode[labels[labels >= 0]]
        names = [names[c] for c in used.tolist()]
    return labels, names, owner, pairs, items[clash]


def two_label_conflicts(
    pairs: NDArray[np.int64], items: NDArray[np.int64], limit: int
) -> tuple[list[Conflict], int]:
    """One conflict per pair of annotations that disagree, however many items they share: at
    most `limit` of them, and how many there are."""
    if len(items) == 0:
        return [], 0
    order = np.lexsort((items, pairs[:, 1], pairs[:, 0]))
    pairs, items = pairs[order], items[order]
    starts = np.flatnonzero(np.r_[True, (pairs[1:] != pairs[:-1]).any(axis=1)])
    ends = np.r_[starts[1:], len(items)]
    conflicts = []
    for start, end in zip(starts[:limit], ends[:limit], strict=True):
        earlier, later = pairs[start].tolist()
        conflicts.append(
            Conflict(
                kind="two_labels",
                message=(
                    f"{end - start} item(s) have two different labels, from annotations "
                    f"{earlier} and {later}"
                ),
                annotation_ids=[earlier, later],
                items=items[start : min(end, start + ITEMS_PER_CONFLICT)].tolist(),
            )
        )
    return conflicts, len(starts)
