"""Partial labels from label annotations; a later annotation's label wins, and an item given
two different labels is reported as a conflict naming both annotations. An erasing record
(`{"items", "erase": true}`, from an eraser scribble) unlabels its items: labels given before it
neither hold nor clash with later ones.

The annotations arrive as arrays (`LabelAnnotations`, kept between compilations by
`app/sideinfo/compiled.py`), so deriving the labels costs no Python per annotation."""

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import ITEMS_PER_CONFLICT, Conflict

ERASE = -1  # the name code of an erasing record


def derive_labels(
    n_items: int,
    *,
    ids: NDArray[np.int64],
    order: NDArray[np.int64],
    codes: NDArray[np.int32],
    name_table: list[str],
    items: NDArray[np.int64],
    record_of: NDArray[np.int64],
) -> tuple[NDArray[np.int32], list[str], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Labels per item (-1 unlabeled), label names (sorted), the annotation that set each label
    (-1 for none), and the clashes: (earlier, later) annotation id pairs with the item of each.

    Per label record: its annotation `ids`, its place in creation `order` (distinct, increasing
    with creation; an erase and a label under one id are ordered erase first), and its name's
    code in `name_table` (`ERASE` for an erasing record). Per (item, record) entry: the item and
    the record's index (`record_of`).
    """
    labels = np.full(n_items, -1, dtype=np.int32)
    owner = np.full(n_items, -1, dtype=np.int64)
    if len(ids) == 0:
        return labels, [], owner, np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    # Rank the records by creation: the newest record touching an item decides its label.
    by_age = np.argsort(order, kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[by_age] = np.arange(len(ids))
    aged_codes, aged_ids = codes[by_age], ids[by_age]
    entry_rank = rank[record_of]

    newest = np.full(n_items, -1, dtype=np.int64)
    np.maximum.at(newest, items, entry_rank)
    touched = newest >= 0
    labels[touched] = aged_codes[newest[touched]]
    owner[touched] = np.where(labels[touched] >= 0, aged_ids[newest[touched]], -1)

    # Only labels given after an item's last erasure still hold on it, so only they can clash.
    entry_codes = aged_codes[entry_rank]
    erasing = entry_codes == ERASE
    last_erase = np.full(n_items, -1, dtype=np.int64)
    np.maximum.at(last_erase, items[erasing], entry_rank[erasing])
    live = ~erasing & (entry_rank > last_erase[items])
    clash = live & (entry_codes != labels[items])
    pairs = np.column_stack([aged_ids[entry_rank[clash]], owner[items[clash]]])

    # The names in use, sorted; a label erased everywhere is no longer a category.
    used = np.unique(labels[touched & (labels >= 0)])
    names = sorted(name_table[c] for c in used.tolist())
    if len(used):
        recode = np.full(len(name_table), -1, dtype=np.int32)
        recode[used] = [names.index(name_table[c]) for c in used.tolist()]
        labeled = labels >= 0
        labels[labeled] = recode[labels[labeled]]
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
